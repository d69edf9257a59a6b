// Table output (meta.k8s.io/v1 Table), which kubectl asks for with
// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`: the columns kubectl prints against a
// real cluster. Pods: NAME, READY, STATUS, RESTARTS, AGE (wide: IP, NODE); services: NAME,
// TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S), AGE; custom resources: NAME and the CRD's printer
// columns (dates as ages); anything else NAME and AGE.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apiserver/resources.h"

namespace kuscia_host::apiserver {

// Whether an Accept header asks for a Table.
bool wantsTable(const std::string& accept);

// The Table of `objects` (full objects) of resource `r`, at resourceVersion `rv`; ages are
// relative to `nowNanos`.
nlohmann::json toTable(const ResourceInfo& r, const std::vector<nlohmann::json>& objects,
                       const std::string& rv, int64_t nowNanos);

// A watch event line of full objects rewritten as upstream sends it to a Table watch: the object
// becomes a Table of one row, with the column definitions in the first event only (`first`, then
// cleared). BOOKMARK and ERROR events pass unchanged.
std::string tableWatchLine(const ResourceInfo& r, const std::string& line, bool& first,
                           int64_t nowNanos);

// "5s", "3m20s", "2d4h": how kubectl shows an age (k8s.io/apimachinery duration.HumanDuration).
std::string humanDuration(int64_t seconds);

} // namespace kuscia_host::apiserver
