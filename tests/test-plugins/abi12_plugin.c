/* abi12: a plugin built against the frozen ABI 1.2 header (tests/abi/v1_2/kuscia_host/abi.h), as
 * a plugin compiled before 1.3 existed. The host must load it and serve its admin route, and
 * its offline routes (the 1.2 export) must answer; it never releases cached objects, and a host
 * must not need it to. */
#include <kuscia_host/abi.h>

#include <stdio.h>
#include <stdlib.h>

#if KH_ABI_VERSION_MINOR != 2
#error "abi12 must be built against the frozen 1.2 header"
#endif

typedef struct {
  const kh_host_api_v1_t* host;
} abi12_instance;

static kh_instance_t* create(const kh_host_api_v1_t* host, kh_host_ctx_t* ctx, const char* domain,
                             const char* config, size_t config_len, char* err, size_t err_len) {
  (void)domain, (void)config, (void)config_len;
  abi12_instance* self = calloc(1, sizeof *self);
  if (self == NULL) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  self->host = host;
  if (host->route_register(ctx, "/api/v1/abi12", err, err_len) != KH_OK) {
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
  abi12_instance* self = (abi12_instance*)instance;
  char body[256];
  int n = snprintf(body, sizeof body, "{\"abi\": \"1.2\", \"path\": \"%s\"}", request->path);
  self->host->http_respond(response, 200, NULL, body, (size_t)n);
  return KH_OK;
}

static void destroy(kh_instance_t* instance) {
  free(instance);
}

static const kh_plugin_v1_t kPlugin = {sizeof(kh_plugin_v1_t),
                                       KH_ABI_VERSION_MAJOR,
                                       KH_ABI_VERSION_MINOR,
                                       "abi12",
                                       "1.2.0",
                                       "built against the frozen ABI 1.2 header",
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

KH_EXPORT kh_status_t kh_offline_get_v1(const char* config_json, size_t config_len,
                                        const char* path, const char* query,
                                        kh_offline_respond_fn respond, void* user, char* err,
                                        size_t err_len) {
  char body[256];
  (void)config_json, (void)config_len, (void)err, (void)err_len;
  int n = snprintf(body, sizeof body, "{\"abi\": \"1.2\", \"offline\": \"%s?%s\"}", path, query);
  respond(user, 200, NULL, body, (size_t)n);
  return KH_OK;
}
