// Plugin loading: permission checks, dlopen through Boost.DLL (RTLD_NOW | RTLD_LOCAL), and the
// ABI version handshake. A PluginLibrary stays loaded as long as any shared_ptr to it lives;
// instances hold one, so a library is never unloaded while anything from it is alive.
#pragma once

#include <kuscia_host/abi.h>
#include <sys/types.h>

#include <boost/dll/shared_library.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>

#include "common/result.h"

namespace kuscia_host {

class PluginLibrary {
public:
  PluginLibrary(boost::dll::shared_library lib, const kh_plugin_v1_t* descriptor, std::string path);
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const kh_plugin_v1_t& descriptor() const { return *descriptor_; }
  const std::string& path() const { return path_; }
  std::string name() const { return descriptor_->name; }
  std::string version() const {
    return descriptor_->version != nullptr ? descriptor_->version : "";
  }
  // ABI 1.1 callbacks, NULL when the plugin was built before them or does not implement them.
  decltype(kh_plugin_v1_t::on_http_request) onHttpRequest() const {
    return KH_HAS_FIELD(descriptor_, kh_plugin_v1_t, on_http_request) ? descriptor_->on_http_request
                                                                      : nullptr;
  }
  decltype(kh_plugin_v1_t::validate_config) validateConfig() const {
    return KH_HAS_FIELD(descriptor_, kh_plugin_v1_t, validate_config) ? descriptor_->validate_config
                                                                      : nullptr;
  }

  // ABI 1.2's offline routes (abi.h), NULL when the library does not export them.
  kh_offline_get_v1_fn offlineGet() const {
    if (!lib_.has(KH_OFFLINE_GET_SYMBOL)) return nullptr;
    return &lib_.get<std::remove_pointer_t<kh_offline_get_v1_fn>>(KH_OFFLINE_GET_SYMBOL);
  }

  // ABI 1.5's plugin commands (abi.h), NULL when the library declares none.
  const kh_commands_t* commands() const {
    if (!lib_.has(KH_COMMANDS_SYMBOL)) return nullptr;
    const kh_commands_t* c =
        lib_.get<std::remove_pointer_t<kh_commands_v1_fn>>(KH_COMMANDS_SYMBOL)();
    return c != nullptr && c->abi_major == KH_ABI_VERSION_MAJOR ? c : nullptr;
  }

private:
  boost::dll::shared_library lib_;
  const kh_plugin_v1_t* descriptor_;
  std::string path_;
};

struct LoaderOptions {
  // Besides root, the one user allowed to own plugin files and directories (the service user).
  uid_t allowedOwner = 0;
};

class PluginLoader {
public:
  explicit PluginLoader(LoaderOptions options);

  // Loads the library at `path` (absolute). On failure the message names the file and the
  // reason, and for version mismatches both versions and what to do. With `expectedName`, a
  // library whose descriptor carries another name is refused. `run` and `check-config` both
  // load through here, so they accept and refuse the same files.
  Result<std::shared_ptr<PluginLibrary>> load(const std::string& path,
                                              const std::string& expectedName = "") const;

  // Refuses relative paths, files that are not regular, and any file or directory on the path
  // (up to /) that is writable by group or others (sticky root-owned directories such as /tmp
  // excepted) or owned by someone other than root or the allowed owner.
  Result<void> checkPermissions(const std::filesystem::path& path) const;

private:
  LoaderOptions options_;
};

} // namespace kuscia_host
