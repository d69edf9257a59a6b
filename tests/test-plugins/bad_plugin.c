/* Deliberately broken plugins for the loader tests; one source, one variant per build:
 *   KH_VARIANT_ABI2        exports kh_plugin_entry_v2 (a plugin for a future host)
 *   KH_VARIANT_NEWER_MINOR exports v1 with a minor version newer than the host's
 *   KH_VARIANT_NO_ENTRY    exports nothing the host looks for
 *   KH_VARIANT_UNRESOLVED  needs a symbol nobody defines (dlopen with RTLD_NOW fails)
 *   KH_VARIANT_BAD_MAJOR   exports the v1 symbol but claims major 2 in its descriptor */
#include <kuscia_host/abi.h>

static kh_instance_t* on_create(const kh_host_api_v1_t* host, kh_host_ctx_t* ctx,
                                const char* domain, const char* config, size_t len, char* err,
                                size_t err_len) {
  (void)host;
  (void)ctx;
  (void)domain;
  (void)config;
  (void)len;
  (void)err;
  (void)err_len;
  static int dummy;
  return (kh_instance_t*)&dummy;
}
static kh_status_t on_start(kh_instance_t* i, char* err, size_t len) {
  (void)i;
  (void)err;
  (void)len;
  return KH_OK;
}
static void on_destroy(kh_instance_t* i) {
  (void)i;
}

#if defined(KH_VARIANT_UNRESOLVED)
extern int kh_test_symbol_that_does_not_exist(void);
int kh_test_use_it(void) {
  return kh_test_symbol_that_does_not_exist();
}
#endif

#if defined(KH_VARIANT_ABI2)
#define MAJOR 2
#define MINOR 0
#elif defined(KH_VARIANT_BAD_MAJOR)
#define MAJOR 2
#define MINOR 0
#elif defined(KH_VARIANT_NEWER_MINOR)
#define MAJOR KH_ABI_VERSION_MAJOR
#define MINOR (KH_ABI_VERSION_MINOR + 1)
#else
#define MAJOR KH_ABI_VERSION_MAJOR
#define MINOR KH_ABI_VERSION_MINOR
#endif

static const kh_plugin_v1_t descriptor = {
    sizeof(kh_plugin_v1_t),
    MAJOR,
    MINOR,
    "bad",
    "0.0.0",
    "loader test plugin",
    on_create,
    on_start,
    0,
    on_destroy,
    0,
    0,
    0,
    0,
    0,
};

#if defined(KH_VARIANT_ABI2)
KH_EXPORT const kh_plugin_v1_t* kh_plugin_entry_v2(void) {
  return &descriptor;
}
#elif !defined(KH_VARIANT_NO_ENTRY)
KH_EXPORT const kh_plugin_v1_t* kh_plugin_entry_v1(void) {
  return &descriptor;
}
#else
KH_EXPORT int kh_some_other_symbol(void) {
  return descriptor.abi_major;
}
#endif
