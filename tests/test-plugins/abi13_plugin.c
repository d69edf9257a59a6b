/* abi13: a plugin built against the frozen ABI 1.3 header (tests/abi/v1_3/kuscia_host/abi.h), as
 * a plugin compiled before 1.4 existed. The host must load it and serve its admin route, answered
 * before on_http_request returns (it knows nothing of deferred answers). */
#include <kuscia_host/abi.h>

#include <stdio.h>
#include <stdlib.h>

#if KH_ABI_VERSION_MINOR != 3
#error "abi13 must be built against the frozen 1.3 header"
#endif

typedef struct {
  const kh_host_api_v1_t* host;
} abi13_instance;

static kh_instance_t* create(const kh_host_api_v1_t* host, kh_host_ctx_t* ctx, const char* domain,
                             const char* config, size_t config_len, char* err, size_t err_len) {
  (void)domain, (void)config, (void)config_len;
  abi13_instance* self = calloc(1, sizeof *self);
  if (self == NULL) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  self->host = host;
  if (host->route_register(ctx, "/api/v1/abi13", err, err_len) != KH_OK) {
    free(self);
    return NULL;
  }
  return (kh_instance_t*)self;
}

static kh_status_t start(kh_instance_t* instance, char* err, size_t err_len) {
  (void)instance, (void)err, (void)err_len;
  return KH_OK;
}

static kh_status_t on_http(kh_instance_t* instance, const kh_http_request_t* request,
                           kh_http_response_t* response) {
  abi13_instance* self = (abi13_instance*)instance;
  char body[256];
  /* A newer host's table holds every 1.3 field (cache_release is NULL without a cluster). */
  int release = KH_HAS_FIELD(self->host, kh_host_api_v1_t, cache_release);
  int n = snprintf(body, sizeof body, "{\"abi\": \"1.3\", \"path\": \"%s\", \"release\": %s}",
                   request->path, release ? "true" : "false");
  self->host->http_respond(response, 200, NULL, body, (size_t)n);
  return KH_OK;
}

static void destroy(kh_instance_t* instance) {
  free(instance);
}

static const kh_plugin_v1_t kPlugin = {sizeof(kh_plugin_v1_t),
                                       KH_ABI_VERSION_MAJOR,
                                       KH_ABI_VERSION_MINOR,
                                       "abi13",
                                       "1.3.0",
                                       "built against the frozen ABI 1.3 header",
                                       create,
                                       start,
                                       NULL,
                                       destroy,
                                       NULL,
                                       NULL,
                                       NULL,
                                       on_http,
                                       NULL};

KH_EXPORT const kh_plugin_v1_t* kh_plugin_entry_v1(void) {
  return &kPlugin;
}
