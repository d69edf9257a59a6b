/* abi15: a plugin built against the frozen ABI 1.5 header (tests/abi/v1_5/kuscia_host/abi.h), as
 * a plugin compiled before 1.6 existed. The host must load it, give its instances their library
 * state (1.5) and record its histogram's observations, which carry no exemplar (1.6); its route
 * says what it found. */
#include <kuscia_host/abi.h>

#include <stdio.h>
#include <stdlib.h>

#if KH_ABI_VERSION_MINOR != 5
#error "abi15 must be built against the frozen 1.5 header"
#endif

typedef struct {
  const kh_host_api_v1_t* host;
  int* shared;
} abi15_instance;

static void* make_state(void) {
  return calloc(1, sizeof(int));
}

static void destroy_state(void* state) {
  free(state);
}

static kh_instance_t* create(const kh_host_api_v1_t* host, kh_host_ctx_t* ctx, const char* domain,
                             const char* config, size_t config_len, char* err, size_t err_len) {
  (void)domain, (void)config, (void)config_len;
  abi15_instance* self = calloc(1, sizeof *self);
  if (self == NULL) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  self->host = host;
  self->shared = host->library_state(ctx, make_state, destroy_state);
  static const double buckets[] = {1, 2};
  kh_metric_desc_t desc = {
      sizeof desc, KH_METRIC_HISTOGRAM, "abi15_wait_seconds", "waits", NULL, 0, buckets, 2};
  kh_metric_t* metric = NULL;
  if (self->shared == NULL || host->metric_register(ctx, &desc, &metric, err, err_len) != KH_OK ||
      host->route_register(ctx, "/api/v1/abi15", err, err_len) != KH_OK) {
    free(self);
    return NULL;
  }
  host->metric_observe(metric, NULL, 0, 1.5);
  ++*self->shared;
  return (kh_instance_t*)self;
}

static kh_status_t start(kh_instance_t* instance, char* err, size_t err_len) {
  (void)instance, (void)err, (void)err_len;
  return KH_OK;
}

static kh_status_t on_http(kh_instance_t* instance, const kh_http_request_t* request,
                           kh_http_response_t* response) {
  abi15_instance* self = (abi15_instance*)instance;
  char body[256];
  int n = snprintf(body, sizeof body, "{\"abi\": \"1.5\", \"path\": \"%s\", \"instances\": %d}",
                   request->path, *self->shared);
  self->host->http_respond(response, 200, NULL, body, (size_t)n);
  return KH_OK;
}

static void destroy(kh_instance_t* instance) {
  free(instance);
}

static const kh_plugin_v1_t kPlugin = {sizeof(kh_plugin_v1_t),
                                       KH_ABI_VERSION_MAJOR,
                                       KH_ABI_VERSION_MINOR,
                                       "abi15",
                                       "1.5.0",
                                       "built against the frozen ABI 1.5 header",
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
