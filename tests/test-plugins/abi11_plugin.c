/* abi11: a plugin built against the frozen ABI 1.1 header (tests/abi/v1_1/kuscia_host/abi.h), as
 * a plugin compiled before 1.2 existed. The host must load it, serve its admin route and ask it to
 * validate its config; it exports no offline routes, and a host must not need them. */
#include <kuscia_host/abi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if KH_ABI_VERSION_MINOR != 1
#error "abi11 must be built against the frozen 1.1 header"
#endif

typedef struct {
  const kh_host_api_v1_t* host;
  kh_host_ctx_t* ctx;
} abi11_instance;

/* A config holding "bad" is refused, naming the key. */
static kh_status_t validate(const char* config, size_t config_len, char* key, size_t key_len,
                            char* err, size_t err_len) {
  if (config_len > 0 && strstr(config, "\"bad\"") != NULL) {
    snprintf(key, key_len, "bad");
    snprintf(err, err_len, "config key 'bad': abi11 refuses it");
    return KH_ERR_INVALID_ARGUMENT;
  }
  return KH_OK;
}

static kh_instance_t* create(const kh_host_api_v1_t* host, kh_host_ctx_t* ctx, const char* domain,
                             const char* config, size_t config_len, char* err, size_t err_len) {
  char key[64];
  (void)domain;
  if (validate(config, config_len, key, sizeof key, err, err_len) != KH_OK) return NULL;
  abi11_instance* self = calloc(1, sizeof *self);
  if (self == NULL) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  self->host = host;
  self->ctx = ctx;
  if (host->route_register(ctx, "/api/v1/abi11", err, err_len) != KH_OK) {
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
  abi11_instance* self = (abi11_instance*)instance;
  char body[256];
  int n = snprintf(body, sizeof body, "{\"abi\": \"1.1\", \"path\": \"%s\"}", request->path);
  self->host->http_respond(response, 200, NULL, body, (size_t)n);
  return KH_OK;
}

static void destroy(kh_instance_t* instance) {
  free(instance);
}

static const kh_plugin_v1_t kPlugin = {sizeof(kh_plugin_v1_t),
                                       KH_ABI_VERSION_MAJOR,
                                       KH_ABI_VERSION_MINOR,
                                       "abi11",
                                       "1.1.0",
                                       "built against the frozen ABI 1.1 header",
                                       create,
                                       start,
                                       NULL,
                                       destroy,
                                       NULL,
                                       NULL,
                                       NULL,
                                       on_http,
                                       validate};

KH_EXPORT const kh_plugin_v1_t* kh_plugin_entry_v1(void) {
  return &kPlugin;
}
