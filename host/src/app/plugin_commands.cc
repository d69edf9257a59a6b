#include "app/plugin_commands.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <utility>

#include "app/cluster_reader.h"
#include "app/plugin_search.h"
#include "kube/cluster_access.h"
#include "plugin_host/host_api.h"

namespace kuscia_host {

namespace fs = std::filesystem;

namespace {

// What a running command borrows (kh_command_env_t.user): its streams and its readers.
class CommandHost {
public:
  CommandHost(std::ostream& out, std::ostream& err) : out_(out), err_(err) {}

  kh_command_env_t env(bool tty) {
    kh_command_env_t e{};
    e.struct_size = sizeof e;
    e.user = this;
    e.write = &write;
    e.stdout_is_tty = tty ? 1 : 0;
    e.open_cluster = &openCluster;
    e.open_admin = &openAdmin;
    e.get = &get;
    return e;
  }

private:
  static CommandHost& self(void* user) { return *static_cast<CommandHost*>(user); }

  static void write(void* user, int32_t stream, const char* data, size_t len) {
    if (data == nullptr) return;
    (stream == KH_STDERR ? self(user).err_ : self(user).out_).write(data, std::streamsize(len));
    (stream == KH_STDERR ? self(user).err_ : self(user).out_).flush();
  }

  int32_t add(Result<std::unique_ptr<ClusterReader>> reader, char* err, size_t len) {
    if (!reader) {
      copyError(err, len, reader.error());
      return -1;
    }
    readers_.push_back(std::move(*reader));
    return int32_t(readers_.size() - 1);
  }

  static int32_t openCluster(void* user, const char* kubeconfig, char* err, size_t len) {
    std::string path = kubeconfig != nullptr ? kubeconfig : "";
    auto access = !path.empty()                                   ? kube::loadKubeconfig(path)
                  : kube::processEnv()("KUBERNETES_SERVICE_HOST") ? kube::loadInCluster()
                                                                  : kube::loadKubeconfig("");
    if (!access) {
      copyError(err, len, access.error());
      return -1;
    }
    return self(user).add(ClusterReader::open(*access), err, len);
  }

  static int32_t openAdmin(void* user, const char* server, const char* tokenFile,
                           const char* caFile, char* err, size_t len) {
    auto text = [](const char* s) { return std::string(s != nullptr ? s : ""); };
    return self(user).add(ClusterReader::openAdmin(text(server), text(tokenFile), text(caFile)),
                          err, len);
  }

  static kh_status_t get(void* user, int32_t reader, const char* path,
                         kh_offline_respond_fn respond, void* respondUser, char* err, size_t len) {
    auto& readers = self(user).readers_;
    if (reader < 0 || std::size_t(reader) >= readers.size() || path == nullptr) {
      copyError(err, len, "no such reader");
      return KH_ERR_INVALID_ARGUMENT;
    }
    auto& r = *readers[std::size_t(reader)];
    auto answer = r.fetch(path);
    if (!answer) {
      copyError(err, len, answer.error());
      return KH_ERR_UNAVAILABLE;
    }
    if (answer->status / 100 != 2) {
      copyError(err, len, r.answerError(path, *answer));
      return answer->status == 404 ? KH_ERR_NOT_FOUND : KH_ERR_INTERNAL;
    }
    respond(respondUser, answer->status, "application/json", answer->body.data(),
            answer->body.size());
    return KH_OK;
  }

  std::ostream& out_;
  std::ostream& err_;
  std::vector<std::unique_ptr<ClusterReader>> readers_;
};

} // namespace

std::vector<PluginCommand> findPluginCommands(const std::vector<std::string>& dirs) {
  std::vector<PluginCommand> found;
  PluginLoader loader(LoaderOptions{});
  for (const auto& dir : dirs) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(dir, ec))
      if (f.path().extension() == ".so") files.push_back(f.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      auto lib = loader.load(file.string());
      if (!lib) continue;
      const kh_commands_t* table = (*lib)->commands();
      for (std::size_t i = 0; table != nullptr && i < table->count; ++i) {
        const kh_command_t* c = table->commands[i];
        if (c == nullptr || c->name == nullptr || c->run == nullptr) continue;
        auto same = [c](const PluginCommand& p) { return p.name == c->name; };
        if (std::find_if(found.begin(), found.end(), same) != found.end()) continue;
        found.push_back({c->name, c->summary != nullptr ? c->summary : "", *lib, c});
      }
    }
  }
  return found;
}

std::optional<PluginCommand> findPluginCommand(const std::string& name,
                                               const std::vector<std::string>& dirs) {
  for (auto& command : findPluginCommands(dirs))
    if (command.name == name) return std::move(command);
  return std::nullopt;
}

Result<std::vector<std::string>> commandPluginDirs(const std::vector<std::string>& given) {
  auto search = pluginSearch(given, true);
  if (!search) return makeError(search.error());
  std::vector<std::string> dirs = search->extraPluginDirs;
  dirs.insert(dirs.end(), search->defaultPluginDirs.begin(), search->defaultPluginDirs.end());
  return dirs;
}

Result<std::vector<std::string>> takeCommandPluginDirs(std::vector<std::string>& args) {
  std::vector<std::string> given;
  for (auto it = args.begin(); it != args.end();) {
    if (*it == "--plugin-dir" && std::next(it) != args.end()) {
      given.push_back(*std::next(it));
      it = args.erase(it, std::next(it, 2));
    } else if (it->rfind("--plugin-dir=", 0) == 0) {
      given.push_back(it->substr(std::strlen("--plugin-dir=")));
      it = args.erase(it);
    } else {
      ++it;
    }
  }
  return commandPluginDirs(given);
}

int runPluginCommand(const PluginCommand& command, const std::vector<std::string>& args,
                     std::ostream& out, std::ostream& err, bool stdoutIsTty) {
  // The command runs on this thread, so the plugin's thread-local objects live in this thread's
  // dynamic TLS until the process exits. Unloading the library before then (its last reference
  // goes with `command`) would leave that TLS pointing into an unmapped module for whatever
  // walks it at exit: LeakSanitizer's check crashed on it ("Tracer caught signal 11", a DTLS
  // range starting near 0). The library stays mapped instead (RTLD_NODELETE on the loaded
  // module; the handle is the process's, never closed).
  ::dlopen(command.library->path().c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  CommandHost host(out, err);
  kh_command_env_t env = host.env(stdoutIsTty);
  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& a : args)
    argv.push_back(a.c_str());
  return command.command->run(&env, int32_t(argv.size()), argv.data());
}

std::string pluginCommandsHelp(const std::vector<PluginCommand>& commands) {
  if (commands.empty()) return "";
  std::size_t width = 0;
  for (const auto& c : commands)
    width = std::max(width, c.name.size());
  std::string text = "Plugin commands (each also takes --plugin-dir DIR, where it is looked for "
                     "first):\n";
  for (const auto& c : commands)
    text += "  " + c.name + std::string(width - c.name.size() + 2, ' ') + c.summary + " (" +
            c.library->name() + ")\n";
  return text;
}

} // namespace kuscia_host
