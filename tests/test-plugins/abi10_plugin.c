/* abi10: a plugin built against the frozen ABI 1.0 header (tests/abi/v1_0/kuscia_host/abi.h), as
 * a plugin compiled before 1.1 existed. The host must load it and run it: a timer counts ticks
 * in a metric and logs. Its descriptor is followed in memory by non-NULL garbage where the 1.1
 * callbacks would be: a host that read past struct_size would call it and crash. */
#include <kuscia_host/abi.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if KH_ABI_VERSION_MINOR != 0
#error "abi10 must be built against the frozen 1.0 header"
#endif

typedef struct {
  const kh_host_api_v1_t* host;
  kh_host_ctx_t* ctx;
  kh_metric_t* ticks;
} abi10_instance;

static kh_instance_t* create(const kh_host_api_v1_t* host, kh_host_ctx_t* ctx, const char* domain,
                             const char* config, size_t config_len, char* err, size_t err_len) {
  (void)domain, (void)config, (void)config_len;
  abi10_instance* self = calloc(1, sizeof *self);
  if (self == NULL) {
    strncpy(err, "out of memory", err_len - 1);
    return NULL;
  }
  self->host = host;
  self->ctx = ctx;
  kh_metric_desc_t desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.kind = KH_METRIC_COUNTER;
  desc.name = "abi10_ticks_total";
  desc.help = "ticks of the ABI 1.0 plugin";
  if (host->metric_register(ctx, &desc, &self->ticks, err, err_len) != KH_OK) {
    free(self);
    return NULL;
  }
  return (kh_instance_t*)self;
}

static kh_status_t start(kh_instance_t* instance, char* err, size_t err_len) {
  abi10_instance* self = (abi10_instance*)instance;
  uint64_t id = 0;
  return self->host->timer_start(self->ctx, 1, 5, 7, &id, err, err_len);
}

static kh_status_t on_timer(kh_instance_t* instance, uint64_t timer_id, uint64_t tag) {
  abi10_instance* self = (abi10_instance*)instance;
  (void)timer_id;
  if (tag != 7) return KH_ERR_INTERNAL;
  self->host->metric_add(self->ticks, NULL, 0, 1);
  static const char msg[] = "abi 1.0 tick";
  self->host->log(self->ctx, KH_LOG_DEBUG, msg, sizeof msg - 1);
  return KH_OK;
}

static void destroy(kh_instance_t* instance) {
  free(instance);
}

/* The 1.0 descriptor, then what a 1.1 host would find if it ignored struct_size. */
static const struct {
  kh_plugin_v1_t descriptor;
  void* trap[4];
} kPlugin = {{sizeof(kh_plugin_v1_t), KH_ABI_VERSION_MAJOR, KH_ABI_VERSION_MINOR, "abi10", "1.0.0",
              "built against the frozen ABI 1.0 header", create, start, NULL, destroy, NULL,
              on_timer, NULL},
             {(void*)1, (void*)1, (void*)1, (void*)1}};

KH_EXPORT const kh_plugin_v1_t* kh_plugin_entry_v1(void) {
  return &kPlugin.descriptor;
}
