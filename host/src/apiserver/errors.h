// The embedded API server's errors: each one a metav1.Status (apimachinery/status.h) with the
// reason, code and message a real API server gives, built in one place.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "apimachinery/status.h"
#include "apiserver/resources.h"
#include "apiserver/schema.h"
#include "common/result.h"

namespace kuscia_host::apiserver {

using ApiError = apimachinery::Status;

// A value or the Status to answer with.
template <class T> using ApiResult = Result<T, ApiError>;

ApiError badRequest(const std::string& message);
ApiError notFound(const ResourceInfo& r, const std::string& name);
// 404 for a path that names no resource.
ApiError noSuchResource();
ApiError methodNotAllowed(const std::string& message);
ApiError alreadyExists(const ResourceInfo& r, const std::string& name);
ApiError conflict(const ResourceInfo& r, const std::string& name, const std::string& why);
ApiError invalid(const ResourceInfo& r, const std::string& name,
                 const std::vector<FieldCause>& causes);
ApiError expired(const std::string& message);
// 504 for a resourceVersion newer than the server's (after a restart that lost state, or a
// client that talks to another server): clients relist from "" (client-go does).
ApiError tooLargeResourceVersion(uint64_t requested, uint64_t current);
ApiError unsupportedMediaType(bool builtin);
// A create's or update's body in an encoding other than JSON (`mediaType`: its Content-Type).
ApiError unsupportedBodyType(const std::string& mediaType);

} // namespace kuscia_host::apiserver
