// The commands plugins declare (ABI 1.5, kh_commands_v1): found in the plugin directories, listed
// in the host's help, and run as `kuscia-host NAME ARGS...` with what the host lends them: the
// output streams, and blocking readers of clusters (kubeconfig, in-cluster) and of admin servers
// (TLS, bearer tokens), so that a command's product logic lives in its plugin.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plugin_host/loader.h"

namespace kuscia_host {

struct PluginCommand {
  std::string name, summary;
  std::shared_ptr<PluginLibrary> library; // keeps `command` loaded
  const kh_command_t* command = nullptr;
};

// The commands of the plugins in `dirs`, in order (the first of a name wins). Files that do not
// load as plugins declare nothing (`run` and `check-config` report them where they are used).
std::vector<PluginCommand> findPluginCommands(const std::vector<std::string>& dirs);

// The command `name` of the first plugin in `dirs` that declares it; nullopt when none does.
std::optional<PluginCommand> findPluginCommand(const std::string& name,
                                               const std::vector<std::string>& dirs);

// Where a plugin command is looked for: the directories `given` (absolute), then the directory
// beside the binary and the packaged one. An error for a relative one.
Result<std::vector<std::string>> commandPluginDirs(const std::vector<std::string>& given);
// The same, with `given` the --plugin-dir values of `args`, which it takes out of them.
Result<std::vector<std::string>> takeCommandPluginDirs(std::vector<std::string>& args);

// Runs the command with `args` (args[0] its name); the exit status it returns.
int runPluginCommand(const PluginCommand& command, const std::vector<std::string>& args,
                     std::ostream& out, std::ostream& err, bool stdoutIsTty);

// The help's list of plugin commands ("" when there is none).
std::string pluginCommandsHelp(const std::vector<PluginCommand>& commands);

} // namespace kuscia_host
