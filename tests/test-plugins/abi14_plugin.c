/* abi14: a plugin built against the frozen ABI 1.4 header (tests/abi/v1_4/kuscia_host/abi.h), as
 * a plugin compiled before 1.5 existed. The host must load it and serve its admin route, whose
 * answer it defers (1.4) and gives through the handle; it knows nothing of library states or
 * commands. */
#include <kuscia_host/abi.h>

#include <stdio.h>
#include <stdlib.h>

#if KH_ABI_VERSION_MINOR != 4
#error "abi14 must be built against the frozen 1.4 header"
#endif

typedef struct {
  const kh_host_api_v1_t* host;
} abi14_instance;

static kh_instance_t* create(const kh_host_api_v1_t* host, kh_host_ctx_t* ctx, const char* domain,
                             const char* config, size_t config_len, char* err, size_t err_len) {
  (void)domain, (void)config, (void)config_len;
  abi14_instance* self = calloc(1, sizeof *self);
  if (self == NULL) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  self->host = host;
  if (host->route_register(ctx, "/api/v1/abi14", err, err_len) != KH_OK) {
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
  abi14_instance* self = (abi14_instance*)instance;
  char body[256];
  kh_http_response_t* later = self->host->http_defer(response);
  int n = snprintf(body, sizeof body, "{\"abi\": \"1.4\", \"path\": \"%s\", \"deferred\": %s}",
                   request->path, later != NULL ? "true" : "false");
  self->host->http_respond(later != NULL ? later : response, 200, NULL, body, (size_t)n);
  return KH_OK;
}

static void destroy(kh_instance_t* instance) {
  free(instance);
}

static const kh_plugin_v1_t kPlugin = {sizeof(kh_plugin_v1_t),
                                       KH_ABI_VERSION_MAJOR,
                                       KH_ABI_VERSION_MINOR,
                                       "abi14",
                                       "1.4.0",
                                       "built against the frozen ABI 1.4 header",
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
