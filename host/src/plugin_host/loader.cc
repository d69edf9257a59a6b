#include "plugin_host/loader.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace kuscia_host {
namespace {

std::string abiString(unsigned major, unsigned minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string hostAbi() {
  return abiString(KH_ABI_VERSION_MAJOR, KH_ABI_VERSION_MINOR);
}

} // namespace

PluginLibrary::PluginLibrary(boost::dll::shared_library lib, const kh_plugin_v1_t* descriptor,
                             std::string path)
    : lib_(std::move(lib)), descriptor_(descriptor), path_(std::move(path)) {}

PluginLibrary::~PluginLibrary() = default;

PluginLoader::PluginLoader(LoaderOptions options) : options_(options) {}

Result<void> PluginLoader::checkPermissions(const std::filesystem::path& path) const {
  if (!path.is_absolute())
    return makeError("plugin " + path.string() + ": refused: plugin paths must be absolute");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return makeError("plugin " + path.string() + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return makeError("plugin " + path.string() + ": refused: not a regular file");
  auto checkOne = [&](const std::filesystem::path& p, const struct stat& s,
                      bool dir) -> Result<void> {
    const char* what = dir ? "directory" : "file";
    if (s.st_uid != 0 && s.st_uid != options_.allowedOwner)
      return makeError("plugin " + path.string() + ": refused: " + what + " " + p.string() +
                       " is owned by uid " + std::to_string(s.st_uid) +
                       ", not by root or the user running the host (uid " +
                       std::to_string(options_.allowedOwner) + ")");
    bool stickyRootDir = dir && (s.st_mode & S_ISVTX) != 0 && s.st_uid == 0;
    if ((s.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !stickyRootDir)
      return makeError("plugin " + path.string() + ": refused: " + what + " " + p.string() +
                       " is writable by group or others (chmod go-w " + p.string() + ")");
    return {};
  };
  if (auto r = checkOne(path, st, false); !r) return r;
  for (auto dir = path.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    struct stat ds {};
    if (::stat(dir.c_str(), &ds) != 0)
      return makeError("plugin " + path.string() + ": cannot stat " + dir.string() + ": " +
                       std::strerror(errno));
    if (auto r = checkOne(dir, ds, true); !r) return r;
    if (dir == dir.root_path()) break;
  }
  return {};
}

Result<std::shared_ptr<PluginLibrary>> PluginLoader::load(const std::string& path,
                                                          const std::string& expectedName) const {
  if (auto r = checkPermissions(path); !r) return makeError(r.error());
  boost::dll::shared_library lib;
  boost::dll::fs::error_code ec;
  lib.load(boost::dll::fs::path(path), ec,
           boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  if (ec || !lib.is_loaded()) {
    // Boost clears dlerror(); ask the loader again for the precise reason (e.g. "undefined
    // symbol: foo"). A failing dlopen has no side effects.
    std::string reason = ec.message();
    if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL); h != nullptr) {
      ::dlclose(h);
    } else if (const char* e = ::dlerror(); e != nullptr) {
      reason = e;
    }
    return makeError("plugin " + path + ": cannot load: " + reason);
  }
  if (!lib.has(KH_PLUGIN_ENTRY_SYMBOL)) {
    for (int major = KH_ABI_VERSION_MAJOR + 1; major <= KH_ABI_VERSION_MAJOR + 8; ++major) {
      if (lib.has("kh_plugin_entry_v" + std::to_string(major)))
        return makeError("plugin " + path + ": built for ABI " + std::to_string(major) +
                         ".x, but this host speaks ABI " + hostAbi() +
                         ": install a kuscia-host that supports ABI " + std::to_string(major) +
                         " or rebuild the plugin against SDK " +
                         std::to_string(KH_ABI_VERSION_MAJOR) + ".x");
    }
    return makeError("plugin " + path + ": not a kuscia-host plugin: it does not export " +
                     KH_PLUGIN_ENTRY_SYMBOL +
                     " (build it with KH_PLUGIN and kuscia_host_add_plugin)");
  }
  auto entry = lib.get<const kh_plugin_v1_t*()>(KH_PLUGIN_ENTRY_SYMBOL);
  const kh_plugin_v1_t* d = entry();
  if (d == nullptr)
    return makeError("plugin " + path + ": " + KH_PLUGIN_ENTRY_SYMBOL + " returned NULL");
  if (d->struct_size < offsetof(kh_plugin_v1_t, on_kube_result) + sizeof(d->on_kube_result))
    return makeError("plugin " + path + ": descriptor too small (" +
                     std::to_string(d->struct_size) +
                     " bytes): the plugin is corrupt or was not built with the SDK");
  std::string pluginAbi = abiString(d->abi_major, d->abi_minor);
  if (d->abi_major != KH_ABI_VERSION_MAJOR)
    return makeError("plugin " + path + ": built for ABI " + pluginAbi +
                     ", but this host speaks ABI " + hostAbi() +
                     ": rebuild the plugin against SDK " + std::to_string(KH_ABI_VERSION_MAJOR) +
                     ".x");
  if (d->abi_minor > KH_ABI_VERSION_MINOR)
    return makeError("plugin " + path + ": needs ABI " + pluginAbi +
                     ", newer than this host's ABI " + hostAbi() +
                     ": upgrade kuscia-host or rebuild the plugin against SDK " + hostAbi());
  if (d->name == nullptr || d->name[0] == '\0')
    return makeError("plugin " + path + ": descriptor has no name");
  if (d->on_create == nullptr || d->on_start == nullptr || d->on_destroy == nullptr)
    return makeError("plugin " + path + ": descriptor lacks on_create, on_start or on_destroy");
  if (!expectedName.empty() && expectedName != d->name)
    return makeError("plugin " + path + ": calls itself '" + std::string(d->name) +
                     "' but the config enables '" + expectedName + "'");
  return std::make_shared<PluginLibrary>(std::move(lib), d, path);
}

} // namespace kuscia_host
