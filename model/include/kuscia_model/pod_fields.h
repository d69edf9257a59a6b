// What task-timeline reads of a pod event: its task, phase, times, the Ready and PodScheduled
// conditions and its containers' starts and waiting reasons, read straight off simdjson's DOM of
// the projected fields.
//
// Pod events are the most numerous a task-timeline instance handles (three or more a pod), and
// building a nlohmann DOM of each (conditions, containerStatuses) and reading it back was an
// eighth of L1's instructions (the benchmarks' history). The values read are the same as from
// parseFields' DOM: an object's repeated key reads as its last, a condition is the first of its
// type, a value of the wrong type reads as absent (nlohmann's value() would throw).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kuscia_host::model {

// A field holding a time: absent (or null), a string, or another value (malformed; its JSON text
// is kept for the log line).
struct TimeText {
  enum Kind : uint8_t { kAbsent, kString, kOther };
  Kind kind = kAbsent;
  std::string text; // the string, or the value's JSON text
};

// The first condition of a type in status.conditions (all false and empty when there is none).
struct PodCondition {
  bool isTrue = false, isFalse = false;
  std::optional<std::string> reason; // nullopt: absent (or not a string)
  std::string message;
  TimeText lastTransitionTime;
};

struct PodFields {
  std::string task, phase, reason, message;
  TimeText create, start;
  PodCondition ready, scheduled;
  // The latest state.running.startedAt once every container runs (containersStartTime of
  // kuscia_model/pod_events.h).
  std::optional<int64_t> containersStart;
  // The containers' waiting reasons as task-timeline's podWaiting reads them: the first waiting
  // state with a reason, else the last waiting state's (empty) reason and message.
  bool containerWaiting = false;
  std::string waitingReason, waitingMessage;
  // Every container's waiting state that has a reason, in order: (reason, message), as
  // PodFacts::addContainersWaiting (kuscia_model/pod_events.h) reads them.
  std::vector<std::pair<std::string, std::string>> waitingReasons;
};

// The JSON pointers of the fields readPodFields reads, in order (the task-id annotation,
// creationTimestamp, startTime, phase, conditions, containerStatuses, reason, message): the
// subscription's projection.
std::vector<std::string> podFieldPointers();
// The fields of a pod event projected with podFieldPointers(). Text that is not an array of as
// many elements reads as no field at all, as parseFields reads it.
PodFields readPodFields(std::string_view fieldsJson);

// A shorter projection, for what a pod's facts need (DomainPods, domain_pods.h): the task-id
// annotation, conditions and containerStatuses, in that order. readPodFacts() reads its events
// as readPodFields() reads those fields; the others stay empty.
std::vector<std::string> podFactPointers();
PodFields readPodFacts(std::string_view fieldsJson);

} // namespace kuscia_host::model
