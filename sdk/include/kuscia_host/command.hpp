// kuscia-host C++ wrapper of plugin commands (ABI 1.5; header-only, C++17).
//
// A plugin declares command-line commands with KH_COMMANDS, each a function
//   int run(const sdk::CommandEnv& env, const std::vector<std::string>& args)
// that parses `args` (args[0] is the command's name), writes through env and returns the exit
// status (0 done, 1 failed, 2 a usage error). `kuscia-host NAME ARGS...` then runs it:
//
//   KH_COMMANDS(KH_COMMAND("hello", "Print a greeting", myplugin::runHello))
//
// Use KH_COMMANDS at most once per plugin library, at namespace scope. An exception that
// escapes the function is printed to stderr and exits 1: nothing thrown reaches the host.
#ifndef KUSCIA_HOST_COMMAND_HPP
#define KUSCIA_HOST_COMMAND_HPP

#include <kuscia_host/abi.h>
#include <kuscia_host/plugin.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::sdk {

// What the host lends a running command (kh_command_env_t): output, and blocking reads from
// clusters and admin servers. Valid during the command's run, on its thread.
class CommandEnv {
public:
  explicit CommandEnv(const kh_command_env_t* env) : env_(env) {}

  void out(std::string_view text) const { write(KH_STDOUT, text); }
  void err(std::string_view text) const { write(KH_STDERR, text); }
  bool stdoutIsTty() const { return env_->stdout_is_tty != 0; }

  // A reader of a cluster's API server: from `kubeconfig`, or when empty in-cluster, else
  // $KUBECONFIG or ~/.kube/config. Throws HostError with the reason.
  int32_t openCluster(const std::string& kubeconfig) const {
    char err[1024] = {0};
    int32_t id = env_->open_cluster(env_->user, kubeconfig.c_str(), err, sizeof err);
    if (id < 0) throw HostError(KH_ERR_INVALID_ARGUMENT, err);
    return id;
  }
  // A reader of a kuscia-host admin server (http(s)://HOST:PORT); the token file (re-read at
  // each request) and the CA file may be empty. Throws HostError with the reason.
  int32_t openAdmin(const std::string& server, const std::string& tokenFile = "",
                    const std::string& caFile = "") const {
    char err[1024] = {0};
    int32_t id = env_->open_admin(env_->user, server.c_str(), nullOrText(tokenFile),
                                  nullOrText(caFile), err, sizeof err);
    if (id < 0) throw HostError(KH_ERR_INVALID_ARGUMENT, err);
    return id;
  }
  // The body of a 2xx answer to GET `pathAndQuery`. Throws HostError: KH_ERR_NOT_FOUND for a
  // 404, else KH_ERR_INTERNAL, with a message naming the server and what it said.
  std::string get(int32_t reader, const std::string& pathAndQuery) const {
    std::string body;
    char err[1024] = {0};
    kh_status_t s = env_->get(
        env_->user, reader, pathAndQuery.c_str(),
        [](void* user, int32_t, const char*, const char* data, size_t len) {
          static_cast<std::string*>(user)->assign(data != nullptr ? data : "", len);
        },
        &body, err, sizeof err);
    if (s != KH_OK) throw HostError(s, err);
    return body;
  }

private:
  void write(int32_t stream, std::string_view text) const {
    if (!text.empty()) env_->write(env_->user, stream, text.data(), text.size());
  }
  static const char* nullOrText(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

  const kh_command_env_t* env_;
};

using CommandFn = int (*)(const CommandEnv& env, const std::vector<std::string>& args);

// Parses a command's arguments with a parser shaped as CLI11's App (the bundled commands use
// CLI11, which the plugin links; the SDK needs none): `app.parse(reversedArgs)` throwing `Error`
// for --help or a bad usage, `app.exit(error, out, err)` printing it. nullopt: parsed, run the
// command; else the exit status (0 after --help, 2 for a usage error), with what the parser
// printed written through env.
//   if (auto code = sdk::parseArgs<CLI::ParseError>(app, env, args)) return *code;
template <class Error, class App>
std::optional<int> parseArgs(App& app, const CommandEnv& env,
                             const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend() - (args.empty() ? 0 : 1));
  try {
    app.parse(reversed);
    return std::nullopt;
  } catch (const Error& e) {
    std::ostringstream out, err;
    int code = app.exit(e, out, err);
    env.out(out.str());
    env.err(err.str());
    return code == 0 ? 0 : 2;
  }
}

namespace detail {

template <CommandFn Fn>
int32_t runCommand(const kh_command_env_t* env, int32_t argc, const char* const* argv) {
  CommandEnv e(env);
  try {
    std::vector<std::string> args(argv, argv + (argc > 0 ? argc : 0));
    return Fn(e, args);
  } catch (const std::exception& ex) {
    e.err(std::string(argc > 0 ? argv[0] : "command") + ": " + ex.what() + "\n");
  } catch (...) {
    e.err(std::string(argc > 0 ? argv[0] : "command") + ": unknown error\n");
  }
  return 1;
}

// The C descriptor of one command (static storage: one per function).
template <CommandFn Fn> const kh_command_t* command(const char* name, const char* summary) {
  static const kh_command_t c = {sizeof(kh_command_t), name, summary, &runCommand<Fn>};
  return &c;
}

} // namespace detail
} // namespace kuscia_host::sdk

// One command for KH_COMMANDS: its name, its one-line summary and its function.
#define KH_COMMAND(name, summary, fn) ::kuscia_host::sdk::detail::command<&fn>(name, summary)

// Exports kh_commands_v1 with the commands given (KH_COMMAND(...), KH_COMMAND(...)).
#define KH_COMMANDS(...)                                                                           \
  extern "C" KH_EXPORT const kh_commands_t* kh_commands_v1(void) {                                 \
    static const kh_command_t* const list[] = {__VA_ARGS__};                                       \
    static const kh_commands_t table = {sizeof(kh_commands_t), KH_ABI_VERSION_MAJOR,               \
                                        KH_ABI_VERSION_MINOR, list, sizeof list / sizeof list[0]}; \
    return &table;                                                                                 \
  }

#endif // KUSCIA_HOST_COMMAND_HPP
