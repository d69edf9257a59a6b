/*
 * kuscia-host plugin ABI, version 1.
 *
 * This header is the whole binary contract between kuscia-host and a plugin (.so). It is C99,
 * uses only standard integer types and opaque handles, and never lets an exception or a C++ type
 * cross the boundary. A plugin built against ABI 1.m loads into every host that speaks ABI 1.n
 * with n >= m; a host refuses a plugin that needs a newer minor, naming both versions.
 *
 * Versions:
 *   1.0  the first contract: lifecycle, logging, clocks, metrics, timers, readiness, Kubernetes
 *        subscriptions, cache and writes.
 *   1.1  plugin-served admin routes (route_register, http_respond, on_http_request) and config
 *        validation without an instance (validate_config), so that `check-config` reports bad
 *        plugin settings as `run` would.
 *   1.2  offline routes: a second, optional export (kh_offline_get_v1) answers GETs of the
 *        plugin's routes from its config alone, without a host or a cluster, so that a command
 *        line reads what the plugin keeps (`kuscia-host history --db` reads task-history's
 *        database through it). Nothing else changed: descriptor and host API are 1.1's.
 *   1.3  releasing cached objects: cache_release lets a subscription say it is done with an
 *        object, so that the host may forget what no subscriber needs (a month of finished
 *        tasks then costs a digest each); KH_ERR_STALE answers a release of an old version.
 *   1.4  deferred answers: http_defer lets on_http_request return before its answer is ready
 *        (a query on the plugin's own thread), so that no callback needs to block.
 *   1.5  plugin commands and library state: an optional export (kh_commands_v1) declares
 *        command-line commands that `kuscia-host <command>` runs with the host's readers of
 *        clusters and admin servers (the product's `timeline` and `history` are task-timeline's
 *        and task-history's); library_state gives the instances of one library in one host a
 *        state they share, instead of a process-wide static.
 *
 * Rules for every later minor version (what 1.1 followed):
 *  - Every struct starts with `struct_size` and only grows at the end; no field is removed,
 *    reordered or retyped, and no constant changes meaning. New constants and new structs may be
 *    added.
 *  - A reader tests a field's presence by offset before touching it: KH_HAS_FIELD(ptr, type,
 *    field). Never compare struct_size with sizeof(the struct as this side knows it): a 1.0
 *    plugin hands over 1.0-sized structs forever, and a newer plugin bigger ones.
 *  - A function pointer that is absent (by struct_size) or NULL means "not available": the host
 *    tests a plugin's callbacks, and plugins test the host's functions, before calling (the C++
 *    wrapper does this and reports KH_ERR_UNAVAILABLE).
 *  - The descriptor's abi_minor is the minor the plugin was built against; a host with an older
 *    minor refuses it. A host never requires a plugin to implement anything added later.
 *  - Breaking changes bump the major version, which is part of the entry symbol's name, so an
 *    old host never even finds a new plugin's entry point by accident.
 *  - tests/abi/v1_0 keeps a frozen copy of the 1.0 header; the suite builds a plugin against it
 *    and runs it in the current host. Freeze each released minor the same way.
 *
 * Naming: `kh_*_t` types; `on_*` callbacks the plugin implements (in kh_plugin_v1_t); host
 * functions reached through kh_host_api_v1_t.
 *
 * Threading (applies to every callback unless stated otherwise):
 *  - The host never runs two callbacks of the same instance at once (each instance has a serial
 *    executor). Callbacks of different instances may run concurrently on different threads.
 *  - Callbacks must not block: no sleeping, no synchronous network I/O.
 *  - Every host function is thread-safe and may be called from any thread, unless its comment
 *    restricts it (subscribe and route_register may only be called from on_create).
 *
 * Strings: unless a length is given, strings are NUL-terminated UTF-8. Pointers passed to a
 * callback are owned by the host and valid only until the callback returns: copy what you keep.
 * Pointers passed to a host function are owned by the caller and need only be valid for the call.
 *
 * Errors: host functions return kh_status_t. Where a function takes (char* err, size_t err_len),
 * the callee writes a NUL-terminated, human-readable message (truncated to err_len) on failure.
 */
#ifndef KUSCIA_HOST_ABI_H
#define KUSCIA_HOST_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KH_ABI_VERSION_MAJOR 1
#define KH_ABI_VERSION_MINOR 5

/* Whether the struct at `ptr` (of `type`, from the other side of the ABI) carries `field`: its
 * struct_size reaches past the field's end. Test it before reading a field added after 1.0. */
#define KH_HAS_FIELD(ptr, type, field)                                                             \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* The one symbol a plugin exports. The major version is part of the name. */
#define KH_PLUGIN_ENTRY_SYMBOL "kh_plugin_entry_v1"

#if defined(_WIN32)
#define KH_EXPORT __declspec(dllexport)
#else
#define KH_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------------- */
typedef int32_t kh_status_t;
#define KH_OK 0
#define KH_ERR_INVALID_ARGUMENT 1 /* a parameter is malformed; err says which */
#define KH_ERR_UNAVAILABLE 2 /* the host does not offer this service (NULL or not configured) */
#define KH_ERR_NOT_FOUND 3   /* no such object, timer, subscription */
#define KH_ERR_FAILED_PRECONDITION                                                                 \
  4                       /* called at the wrong time, e.g. subscribe outside on_create */
#define KH_ERR_INTERNAL 5 /* anything else; err says what */
#define KH_ERR_STALE 6    /* since 1.3: the version named is not the latest one; read it again */

/* Opaque handles. kh_instance_t is the plugin's per-instance state; the host only passes it back.
 * kh_host_ctx_t is the host's per-instance context; the plugin only passes it back. */
typedef struct kh_instance kh_instance_t;
typedef struct kh_host_ctx kh_host_ctx_t;
typedef struct kh_metric kh_metric_t;

/* ---------------------------------------------------------------------------------------------
 * Logging
 * ------------------------------------------------------------------------------------------- */
typedef int32_t kh_log_level_t;
#define KH_LOG_TRACE 0
#define KH_LOG_DEBUG 1
#define KH_LOG_INFO 2
#define KH_LOG_WARN 3
#define KH_LOG_ERROR 4

/* ---------------------------------------------------------------------------------------------
 * Metrics
 * ------------------------------------------------------------------------------------------- */
typedef int32_t kh_metric_kind_t;
#define KH_METRIC_COUNTER 1
#define KH_METRIC_GAUGE 2
#define KH_METRIC_HISTOGRAM 3

/* Describes a metric family. The host adds the labels `plugin` and `domain` itself; a plugin must
 * not declare them. Two instances of one plugin registering the same name share the family; a
 * second registration with a different kind, help or label set fails with KH_ERR_INVALID_ARGUMENT.
 */
typedef struct kh_metric_desc {
  uint32_t struct_size;
  kh_metric_kind_t kind;
  const char* name;               /* Prometheus metric name, [a-zA-Z_:][a-zA-Z0-9_:]* */
  const char* help;               /* one line */
  const char* const* label_names; /* label_count names, [a-zA-Z_][a-zA-Z0-9_]* */
  size_t label_count;
  const double* buckets; /* histograms: upper bounds, strictly increasing; NULL = defaults */
  size_t bucket_count;
} kh_metric_desc_t;

/* ---------------------------------------------------------------------------------------------
 * Kubernetes: subscriptions, events, cache, writes
 * ------------------------------------------------------------------------------------------- */
typedef int32_t kh_scope_t;
#define KH_SCOPE_DOMAIN 1    /* the instance's domain namespace (namespace == domain id) */
#define KH_SCOPE_NAMESPACE 2 /* the namespace named in kh_subscription_t.namespace_name */
#define KH_SCOPE_ALL 3       /* every namespace (cluster-scoped resources too) */

/* A declarative watch. The host owns the watch and shares one per resource between all
 * subscribers; it extracts only the JSON pointers listed in `fields`. MODIFIED is delivered only
 * when one of this subscription's fields (or, with want_raw, the object) changed. Labels are cached
 * only when label_selector is set or "/metadata/labels" is among the fields. Cluster-scoped
 * resources need KH_SCOPE_ALL. */
typedef struct kh_subscription {
  uint32_t struct_size;
  const char* group;    /* "" for the core group */
  const char* version;  /* "v1", "v1alpha1" */
  const char* resource; /* plural: "pods", "kusciatasks" */
  kh_scope_t scope;
  const char* namespace_name; /* only for KH_SCOPE_NAMESPACE */
  const char* label_selector; /* NULL or "" = everything; Kubernetes selector syntax */
  const char* const* fields;  /* JSON pointers (RFC 6901), e.g. "/metadata/creationTimestamp" */
  size_t field_count;
  int32_t want_raw; /* non-zero: events also carry the raw object JSON */
} kh_subscription_t;

typedef int32_t kh_event_type_t;
#define KH_EVENT_ADDED 1
#define KH_EVENT_MODIFIED 2
#define KH_EVENT_DELETED 3 /* carries the last known state */
#define KH_EVENT_SYNCED 4  /* the initial list is in; key, uid and fields are empty */

/* One change seen by a subscription. All pointers are host-owned and valid for the callback only.
 */
typedef struct kh_event {
  uint32_t struct_size;
  uint64_t subscription_id;
  kh_event_type_t type;
  const char* key; /* "<namespace>/<name>", or "<name>" when cluster-scoped */
  const char* uid;
  const char* resource_version;
  /* A JSON array with one element per declared field, in declaration order; an element is null
   * when the pointer does not resolve in the object. */
  const char* fields_json;
  size_t fields_json_len;
  const char* raw_json; /* NULL unless want_raw */
  size_t raw_json_len;
} kh_event_t;

/* An object in the host's cache, as seen through one subscription (same shape as an event). */
typedef struct kh_object {
  uint32_t struct_size;
  const char* key;
  const char* uid;
  const char* resource_version;
  const char* fields_json;
  size_t fields_json_len;
} kh_object_t;

/* Called once per matching object by cache_get/cache_list, synchronously, on the caller's thread.
 * `object` is valid only during the call. Return non-zero to stop the iteration. */
typedef int32_t (*kh_object_visitor_t)(void* user, const kh_object_t* object);

typedef int32_t kh_kube_verb_t;
#define KH_KUBE_PATCH 1
#define KH_KUBE_CREATE 2
#define KH_KUBE_DELETE 3

typedef int32_t kh_patch_type_t;
#define KH_PATCH_MERGE 1 /* application/merge-patch+json */
#define KH_PATCH_JSON 2  /* application/json-patch+json */

/* An asynchronous write. The host rate-limits it and retries transient failures (429, 5xx,
 * connection errors) with exponential backoff, honouring Retry-After, until the answer is final
 * (success, or another error) or the instance stops: a plugin does not retry them itself. The
 * final outcome arrives through on_kube_result (http_code 0 only when the instance stopped first
 * or the request could not be sent at all). */
typedef struct kh_kube_request {
  uint32_t struct_size;
  kh_kube_verb_t verb;
  const char* group;
  const char* version;
  const char* resource;
  const char* namespace_name; /* NULL or "" for cluster-scoped resources */
  const char* name;           /* PATCH/DELETE: the object; CREATE: ignored (taken from body) */
  const char* subresource;    /* NULL, "" or e.g. "status" */
  kh_patch_type_t patch_type; /* PATCH only */
  const char* body; /* PATCH: the patch; CREATE: the object; DELETE: NULL or DeleteOptions */
  size_t body_len;
  const char* resource_version; /* optional precondition (DELETE and merge PATCH); 409 if stale */
  uint64_t user_tag;            /* returned untouched in the result */
} kh_kube_request_t;

/* The outcome of a kh_kube_request_t. Pointers are host-owned, valid for the callback only. */
typedef struct kh_kube_result {
  uint32_t struct_size;
  uint64_t request_id; /* as returned by kube_request */
  uint64_t user_tag;
  int32_t http_code; /* 0 when no HTTP answer was had (the message says why) */
  const char* body;  /* the response body (the object, or a Status) */
  size_t body_len;
  const char* message; /* Status.message on failure, "" on success */
} kh_kube_result_t;

/* ---------------------------------------------------------------------------------------------
 * Admin routes (since 1.1): read-only GET routes a plugin serves on the host's admin server.
 * ------------------------------------------------------------------------------------------- */

/* One request to a route the instance registered. Host-owned, valid during on_http_request. */
typedef struct kh_http_request {
  uint32_t struct_size;
  const char* method; /* "GET" or "HEAD" (the admin server answers 405 to anything else) */
  const char* path;   /* the path as received, without the query, e.g. "/api/v1/timelines/t1" */
  const char* query;  /* the raw query string without '?', "" when there is none */
} kh_http_request_t;

/* Where the answer goes: host-owned, valid during on_http_request only. */
typedef struct kh_http_response kh_http_response_t;

/* ---------------------------------------------------------------------------------------------
 * The host services table. The host fills it; it lives as long as the instance (from on_create
 * to the return of on_destroy). Any function may be NULL: test before calling.
 * ------------------------------------------------------------------------------------------- */
typedef struct kh_host_api_v1 {
  uint32_t struct_size;
  uint16_t abi_major; /* the host's ABI version */
  uint16_t abi_minor;

  /* Logging through the instance's logger (named "<plugin>/<domain>", level set in config).
   * msg: msg_len bytes, need not be NUL-terminated; copied before return. Any thread. */
  void (*log)(kh_host_ctx_t* ctx, kh_log_level_t level, const char* msg, size_t msg_len);
  /* Non-zero when `level` would be emitted; lets plugins skip building expensive messages. */
  int32_t (*log_enabled)(kh_host_ctx_t* ctx, kh_log_level_t level);

  /* Wall clock (Unix epoch) and monotonic clock, in nanoseconds. Any thread. */
  int64_t (*wall_time_ns)(kh_host_ctx_t* ctx);
  int64_t (*monotonic_time_ns)(kh_host_ctx_t* ctx);

  /* The instance's domain id and the deployment mode ("centralized" or "p2p"). The strings live
   * as long as the instance. Any thread. */
  const char* (*domain_id)(kh_host_ctx_t* ctx);
  const char* (*deployment_mode)(kh_host_ctx_t* ctx);

  /* Registers (or finds) a metric family. *out is owned by the host and valid until on_destroy
   * returns. Any thread; normally called from on_create. */
  kh_status_t (*metric_register)(kh_host_ctx_t* ctx, const kh_metric_desc_t* desc,
                                 kh_metric_t** out, char* err, size_t err_len);
  /* Counter: add v (>= 0). Gauge: add v (may be negative). label_values: label_count strings in
   * the order declared. Invalid calls (wrong count, negative counter increment) are ignored and
   * counted by the host. Any thread. */
  void (*metric_add)(kh_metric_t* metric, const char* const* label_values, size_t label_count,
                     double v);
  /* Gauge: set to v. */
  void (*metric_set)(kh_metric_t* metric, const char* const* label_values, size_t label_count,
                     double v);
  /* Histogram: record one observation. */
  void (*metric_observe)(kh_metric_t* metric, const char* const* label_values, size_t label_count,
                         double v);

  /* Starts a timer: on_timer(instance, *out_id, user_tag) runs on the instance's executor after
   * delay_ms, then every period_ms if period_ms > 0. Timers stop before on_stop returns. Any
   * thread. */
  kh_status_t (*timer_start)(kh_host_ctx_t* ctx, uint64_t delay_ms, uint64_t period_ms,
                             uint64_t user_tag, uint64_t* out_id, char* err, size_t err_len);
  /* Cancels a timer; a callback already queued will not run. KH_ERR_NOT_FOUND if unknown. */
  kh_status_t (*timer_cancel)(kh_host_ctx_t* ctx, uint64_t timer_id);

  /* Reports this instance's readiness for /readyz (ready after a successful on_start unless the
   * plugin says otherwise). reason: shown when not ready; copied. Any thread. */
  void (*set_ready)(kh_host_ctx_t* ctx, int32_t ready, const char* reason);

  /* Declares a subscription. Only from on_create (KH_ERR_FAILED_PRECONDITION otherwise). Events
   * start after on_start returns. *out_id identifies the subscription in events and cache calls. */
  kh_status_t (*subscribe)(kh_host_ctx_t* ctx, const kh_subscription_t* sub, uint64_t* out_id,
                           char* err, size_t err_len);
  /* Reads one object ("<ns>/<name>") from the cache through a subscription's projection;
   * visitor runs at most once, before return. KH_ERR_NOT_FOUND if absent. Any thread. */
  kh_status_t (*cache_get)(kh_host_ctx_t* ctx, uint64_t subscription_id, const char* key,
                           kh_object_visitor_t visitor, void* user);
  /* Visits every cached object of a subscription that matches label_selector (NULL = all).
   * A non-empty selector needs cached labels (see kh_subscription_t), else
   * KH_ERR_FAILED_PRECONDITION. The visitor may call back into the host. */
  kh_status_t (*cache_list)(kh_host_ctx_t* ctx, uint64_t subscription_id,
                            const char* label_selector, kh_object_visitor_t visitor, void* user);
  /* Queues a write. The request is copied. *out_request_id is echoed in on_kube_result, which
   * runs on the instance's executor exactly once per accepted request. Any thread. */
  kh_status_t (*kube_request)(kh_host_ctx_t* ctx, const kh_kube_request_t* req,
                              uint64_t* out_request_id, char* err, size_t err_len);

  /* --- since 1.1 (test with KH_HAS_FIELD(api, kh_host_api_v1_t, <field>)) --- */

  /* Serves GET requests whose path starts with path_prefix (absolute, e.g. "/api/v1/timelines/")
   * on the admin server, through on_http_request. Only from on_create. Several instances of one
   * plugin may register the same prefix (centralized mode): the host asks each, on its own
   * executor, and merges their 2xx JSON-object answers as RFC 7386 merge patches in domain
   * order; it answers 404 when every instance did. Prefixes of different plugins must not
   * overlap (KH_ERR_INVALID_ARGUMENT). Answers are limited to 8 MiB, and an instance that does
   * not answer within 5 s gets the request answered 503. */
  kh_status_t (*route_register)(kh_host_ctx_t* ctx, const char* path_prefix, char* err,
                                size_t err_len);
  /* Sets the answer to the request being served: status, content type (NULL: application/json)
   * and body (copied). The last call wins; without one the answer is 500. Only during
   * on_http_request, on its thread; or, once, on a handle from http_defer (since 1.4), from any
   * thread. */
  void (*http_respond)(kh_http_response_t* response, int32_t status, const char* content_type,
                       const char* body, size_t body_len);

  /* --- since 1.3 (test with KH_HAS_FIELD(api, kh_host_api_v1_t, cache_release)) --- */

  /* Says that this subscription is done with the object `key` as of `resource_version` (the
   * version it last got): it needs neither events nor cache reads of it until it changes. Once
   * every subscription that sees the object is done with it, the host forgets it, keeping only a
   * 64-bit digest of what subscribers declared (tens of bytes instead of its fields). Then:
   *  - cache_get and cache_list no longer find it, through any subscription;
   *  - a change of any declared field or label is delivered as KH_EVENT_ADDED to every
   *    subscription that sees the object, as for a new object (it is cached again);
   *  - changes of nothing declared (the resourceVersion, other fields) deliver nothing, and a
   *    relist that finds it unchanged delivers nothing either;
   *  - its deletion delivers nothing (no KH_EVENT_DELETED).
   * Until then it stays cached and is delivered as before. A release outlives changes that this
   * subscription does not see; one it sees (an event) takes it back. Returns KH_OK;
   * KH_ERR_NOT_FOUND when the object is not cached (deleted, already forgotten, or not this
   * subscription's); KH_ERR_STALE when the cache holds a newer version: read it (cache_get) and
   * release that one if still done (if it changed what this subscription sees, its event is on
   * the way as well). Any thread. */
  kh_status_t (*cache_release)(kh_host_ctx_t* ctx, uint64_t subscription_id, const char* key,
                               const char* resource_version);

  /* --- since 1.4 (test with KH_HAS_FIELD(api, kh_host_api_v1_t, http_defer)) --- */

  /* Defers the answer to the request being served, so that on_http_request may return before
   * the answer is ready (a query on a thread of the plugin's own: callbacks must not block).
   * Only during on_http_request, on its thread, at most once per request. Returns a handle that
   * stays valid after the callback returns; `response` is ignored from then on. The plugin must
   * answer it exactly once with http_respond, from any thread; that call frees the handle. An
   * answer later than the route timeout (5 s) is dropped, but must still be made, and every
   * deferred answer must be made before the instance's on_destroy returns. Returns NULL (then
   * answer `response` as usual) when called twice or outside on_http_request. */
  kh_http_response_t* (*http_defer)(kh_http_response_t* response);

  /* --- since 1.5 (test with KH_HAS_FIELD(api, kh_host_api_v1_t, library_state)) --- */

  /* The state the instances of this plugin's library share within this host (in centralized
   * mode, one instance per domain): what `make` returned at the first call with this `make` in
   * this host, on every later call. Another host in the same process (two hosts in one test or
   * demo) gets its own. The host calls destroy(state) once, after the last of its instances of
   * the library is destroyed and before the library is unloaded. `make` must not fail (NULL is
   * returned as is, and made again at the next call). Any thread; calls are serialized. */
  void* (*library_state)(kh_host_ctx_t* ctx, void* (*make)(void), void (*destroy)(void* state));
} kh_host_api_v1_t;

/* ---------------------------------------------------------------------------------------------
 * The plugin descriptor, returned by kh_plugin_entry_v1. It and every string it points to must
 * stay valid as long as the library is loaded (use static storage).
 * ------------------------------------------------------------------------------------------- */
typedef struct kh_plugin_v1 {
  uint32_t struct_size;
  uint16_t abi_major; /* KH_ABI_VERSION_MAJOR the plugin was built with */
  uint16_t abi_minor; /* KH_ABI_VERSION_MINOR the plugin was built with */
  const char* name;   /* matches the name in the host config, e.g. "task-timeline" */
  const char* version;
  const char* description;

  /* Creates an instance for one domain. host and ctx stay valid until on_destroy returns.
   * config_json: the instance's `config` subtree as a JSON object (config_len bytes, also
   * NUL-terminated), valid for the call only. Returns NULL on failure after writing the reason
   * to err. Called on a host thread, never concurrently with another callback of this instance. */
  kh_instance_t* (*on_create)(const kh_host_api_v1_t* host, kh_host_ctx_t* ctx,
                              const char* domain_id, const char* config_json, size_t config_len,
                              char* err, size_t err_len);
  /* Starts the instance (timers and requests may be issued here). A non-OK status with err
   * filled fails the instance. On the instance's executor. */
  kh_status_t (*on_start)(kh_instance_t* instance, char* err, size_t err_len);
  /* Stops the instance: no more events or timers follow. Pending kube requests are completed
   * with http_code 0 before on_destroy. On the instance's executor. May be NULL. */
  void (*on_stop)(kh_instance_t* instance);
  /* Frees the instance. Nothing from the host may be used after this returns. Host thread. */
  void (*on_destroy)(kh_instance_t* instance);

  /* A subscription event. On the instance's executor. May be NULL if the plugin subscribes to
   * nothing. A non-OK status is logged and counted by the host; delivery goes on. */
  kh_status_t (*on_event)(kh_instance_t* instance, const kh_event_t* event);
  /* A timer fired. On the instance's executor. May be NULL if the plugin starts no timers. */
  kh_status_t (*on_timer)(kh_instance_t* instance, uint64_t timer_id, uint64_t user_tag);
  /* A kube request completed. On the instance's executor. May be NULL if it makes no requests. */
  kh_status_t (*on_kube_result)(kh_instance_t* instance, const kh_kube_result_t* result);

  /* --- since 1.1 (the host tests KH_HAS_FIELD(desc, kh_plugin_v1_t, <field>)) --- */

  /* A request to a route the instance registered. Answer with host->http_respond before
   * returning, or defer the answer with host->http_defer (since 1.4). On the instance's
   * executor. May be NULL if the plugin registers no route. */
  kh_status_t (*on_http_request)(kh_instance_t* instance, const kh_http_request_t* request,
                                 kh_http_response_t* response);
  /* Validates an instance's config (as on_create receives it) without creating an instance, for
   * `kuscia-host check-config`. On failure writes the message, and into `key` the config key it
   * concerns ("" when none), and returns non-OK; the message must be the one on_create would
   * give. Any host thread, possibly with no instance alive; must not use the host. May be NULL. */
  kh_status_t (*validate_config)(const char* config_json, size_t config_len, char* key,
                                 size_t key_len, char* err, size_t err_len);
} kh_plugin_v1_t;

/* The entry point. Returns a pointer to a static descriptor; must not fail or allocate state
 * that needs freeing. Called once per load, on a host thread. */
typedef const kh_plugin_v1_t* (*kh_plugin_entry_v1_fn)(void);

/* ---------------------------------------------------------------------------------------------
 * Since 1.2: offline routes, an optional second export. A plugin that keeps something of its own
 * (a database, files) may answer GETs of its routes from its config alone: no instance, no host
 * API, no cluster. The host looks the symbol up only for commands that ask for it, never for
 * `run`; a plugin without it is simply not readable offline.
 * ------------------------------------------------------------------------------------------- */
#define KH_OFFLINE_GET_SYMBOL "kh_offline_get_v1"

/* Receives the answer: status, content type (NULL: application/json) and body, valid for the
 * call only. */
typedef void (*kh_offline_respond_fn)(void* user, int32_t status, const char* content_type,
                                      const char* body, size_t body_len);

/* Answers a GET of `path` (one of the plugin's route prefixes, or below) with the raw `query`
 * ("" when none), for an instance configured by config_json (as on_create would receive it).
 * Calls respond exactly once and returns KH_OK; or returns non-OK with the reason in err (a bad
 * config: the message validate_config gives). Synchronous, on the caller's thread; may block on
 * the plugin's own storage. Must not keep anything between calls that needs freeing. */
typedef kh_status_t (*kh_offline_get_v1_fn)(const char* config_json, size_t config_len,
                                            const char* path, const char* query,
                                            kh_offline_respond_fn respond, void* user, char* err,
                                            size_t err_len);

/* ---------------------------------------------------------------------------------------------
 * Since 1.5: plugin commands, an optional export. A plugin may declare command-line commands,
 * which `kuscia-host <name> ARGS...` runs: the host finds the command in the plugins of its
 * plugin directories (the --plugin-dir options of the command line first, then the packaged
 * directory and the one beside the binary), lists them in its help, and lends the command what a
 * plugin has no means of its own to do: its output streams, and blocking GETs from clusters (a
 * kubeconfig, or in-cluster) and from kuscia-host admin servers (TLS, bearer tokens). The
 * command parses its own arguments and prints its own help. Never looked up by `run`.
 * ------------------------------------------------------------------------------------------- */
#define KH_COMMANDS_SYMBOL "kh_commands_v1"

/* Output streams of kh_command_env_t.write. */
#define KH_STDOUT 1
#define KH_STDERR 2

/* What the host lends a running command. Valid for the run only; used from the command's thread
 * (the caller's) only. */
typedef struct kh_command_env {
  uint32_t struct_size;
  void* user; /* passed back to every function below */
  /* Writes len bytes to KH_STDOUT or KH_STDERR. */
  void (*write)(void* user, int32_t stream, const char* data, size_t len);
  /* Non-zero when stdout is a terminal (a command may then redraw in place). */
  int32_t stdout_is_tty;
  /* Opens a cluster's API server from a kubeconfig file; NULL or "": in-cluster when run in a pod
   * (KUBERNETES_SERVICE_HOST), else $KUBECONFIG or ~/.kube/config. Returns a reader id >= 0, or -1
   * with the reason in err (the file, what is wrong with it). */
  int32_t (*open_cluster)(void* user, const char* kubeconfig, char* err, size_t err_len);
  /* Opens a kuscia-host admin server (http(s)://HOST:PORT); token_file (re-read at each request)
   * and ca_file may be NULL. Returns a reader id >= 0, or -1 with the reason in err. */
  int32_t (*open_admin)(void* user, const char* server, const char* token_file, const char* ca_file,
                        char* err, size_t err_len);
  /* GETs path_and_query from a reader, blocking. Returns KH_OK after calling respond once with a
   * 2xx answer; KH_ERR_NOT_FOUND (404) or KH_ERR_INTERNAL with a message naming the server and
   * the status, or what failed on the way, in err. */
  kh_status_t (*get)(void* user, int32_t reader, const char* path_and_query,
                     kh_offline_respond_fn respond, void* respond_user, char* err, size_t err_len);
} kh_command_env_t;

/* One command. */
typedef struct kh_command {
  uint32_t struct_size;
  const char* name;    /* as typed after kuscia-host: lower case, digits and '-' */
  const char* summary; /* one line for the host's help */
  /* Runs the command with its arguments (argv[0] is the command's name; argc >= 1), writing
   * through env; returns the process's exit status: 0 done, 1 failed, 2 a usage error. It may
   * block (it is the process's one job) and must not let an exception out. */
  int32_t (*run)(const kh_command_env_t* env, int32_t argc, const char* const* argv);
} kh_command_t;

typedef struct kh_commands {
  uint32_t struct_size;
  uint16_t abi_major; /* the ABI the plugin was built with */
  uint16_t abi_minor;
  /* count pointers (not structs: kh_command_t may grow), all in static storage */
  const kh_command_t* const* commands;
  size_t count;
} kh_commands_t;

/* The export: the plugin's commands, in static storage. Must not fail. */
typedef const kh_commands_t* (*kh_commands_v1_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUSCIA_HOST_ABI_H */
