// vigil: the command-line client. It speaks only the wire protocol (proto/) and HTTP.
// Errors: exceptions, caught here and printed as one line; exit codes are listed in --help.
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "client/tools/fsck_command.hpp"
#include "client/tools/profile_command.hpp"
#include "client/cli/camera_command.hpp"
#include "client/cli/token_command.hpp"
#include "client/cli/play_command.hpp"
#include "client/proxy/proxy_command.hpp"
#include "client/cli/record_command.hpp"
#include "client/wire/wire_client.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

struct Globals {
  std::string server = "127.0.0.1:7070";
  std::string token;
  std::string token_file = "data/admin.token";  // read when no token was given otherwise
};

// The token file's first word, if it can be read.
std::string read_token_file(const std::string& file) {
  std::ifstream in(file);
  std::string token;
  in >> token;
  return token;
}

struct Command {
  std::string summary;
  std::function<int(const Globals&, const std::vector<std::string>&)> run;
};

int cmd_status(const Globals& g, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "vigil status: takes no arguments\n";
    return kExitUsage;
  }
  std::unique_ptr<vigil::client::WireClient> client;
  try {
    client = std::make_unique<vigil::client::WireClient>(g.server, std::chrono::seconds(10));
  } catch (const std::exception& e) {
    std::cerr << "vigil: " << e.what() << "\n";
    return kExitUnreachable;
  }
  auto reply = client->hello("vigil-cli", g.token);
  std::cout << "server:            " << g.server << "\n"
            << "version:           " << reply.server_version() << "\n"
            << "protocol:          " << reply.protocol_version() << "\n"
            << "max payload bytes: " << reply.max_frame_bytes() << "\n"
            << "session:           " << reply.session_id() << "\n";
  return kExitOk;
}

int cmd_bench(const Globals&, const std::vector<std::string>& args) { return vigil::bench::bench_main(args); }
int cmd_fsck(const Globals&, const std::vector<std::string>& args) { return vigil::client::fsck_main(args); }
int cmd_profile(const Globals&, const std::vector<std::string>& args) { return vigil::client::profile_main(args); }
int cmd_camera(const Globals&, const std::vector<std::string>& args) { return vigil::client::camera_main(args); }
int cmd_token(const Globals&, const std::vector<std::string>& args) { return vigil::client::token_main(args); }
int cmd_play(const Globals& g, const std::vector<std::string>& args) {
  return vigil::client::play_main(g.server, g.token, args);
}
int cmd_proxy(const Globals&, const std::vector<std::string>& args) { return vigil::client::proxy_main(args); }
int cmd_record(const Globals& g, const std::vector<std::string>& args) {
  return vigil::client::record_main(g.server, g.token, args);
}

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> table{
      {"bench", {"run a benchmark: vigil bench NAME [--quick] [--json FILE] (vigil bench --help lists them)", cmd_bench}},
      {"camera", {"cameras vigild pulls: vigil camera add NAME URL | list | remove NAME [--data DIR | --db URL]", cmd_camera}},
      {"fsck", {"check a volume offline: vigil fsck VOLUME [--db URL] [--repair]", cmd_fsck}},
      {"play", {"play a recorded range to a file or stdout: vigil play --stream NAME --from TIME [--to TIME] -o FILE|-", cmd_play}},
      {"proxy", {"playback proxy for many viewers: vigil proxy --upstream HOST:PORT[,...] [--listen ADDR:PORT] [--cache-mb N]", cmd_proxy}},
      {"record", {"record a camera or file into vigild: vigil record --stream NAME INPUT [--rate MBPS] [--duration S]", cmd_record}},
      {"profile", {"measure a disk for admission: vigil profile TARGET|sim:PRESET [--quick]; vigil profile show FILE", cmd_profile}},
      {"status", {"connect to vigild and show its version and protocol limits", cmd_status}},
      {"token", {"API tokens: vigil token create --role recorder|viewer|admin | list | revoke ID [--data DIR | --db URL]", cmd_token}},
  };
  return table;
}

void usage(std::ostream& out) {
  out << "vigil " VIGIL_VERSION " - command-line client for the Vigil video storage server\n\n"
      << "Usage: vigil [--server HOST:PORT] [--token TOKEN] COMMAND [ARGS...]\n\n"
      << "Commands:\n";
  for (const auto& [name, cmd] : commands()) out << "  " << name << std::string(12 - name.size(), ' ') << cmd.summary << "\n";
  out << "\nOptions:\n"
      << "  --server HOST:PORT  vigild's wire-protocol address (env VIGIL_SERVER; default 127.0.0.1:7070);\n"
      << "                      tls://HOST:PORT for a vigild started with --tls-cert\n"
      << "  --tls-ca FILE       PEM certificate(s) to trust for tls:// (env VIGIL_TLS_CA; default: the system's)\n"
      << "  --token TOKEN       access token (env VIGIL_TOKEN)\n"
      << "  --token-file FILE   read the token from FILE (default: data/admin.token, written by vigild)\n"
      << "  -h, --help          show this help\n"
      << "  --version           print the version\n\n"
      << "Exit codes: 0 ok, 1 failed, 2 usage error, 3 server unreachable.\n";
}

}  // namespace

int main(int argc, char** argv) {
  Globals g;
  if (const char* env = std::getenv("VIGIL_SERVER"); env && *env) g.server = env;
  if (const char* env = std::getenv("VIGIL_TOKEN"); env && *env) g.token = env;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(std::cout);
      return kExitOk;
    }
    if (a == "--version") {
      std::cout << "vigil " VIGIL_VERSION "\n";
      return kExitOk;
    }
    if (a == "--tls-ca" && i + 1 < argc) {
      ::setenv("VIGIL_TLS_CA", argv[++i], 1);  // read by every wire connection of this process
      continue;
    }
    if ((a == "--server" || a == "--token") && i + 1 < argc) {
      (a == "--server" ? g.server : g.token) = argv[++i];
      continue;
    }
    if (a == "--token-file" && i + 1 < argc) {
      g.token_file = argv[++i];
      g.token.clear();  // the file named here wins over VIGIL_TOKEN
      continue;
    }
    if (a.rfind("--server=", 0) == 0) {
      g.server = a.substr(9);
      continue;
    }
    if (a.rfind("--token=", 0) == 0) {
      g.token = a.substr(8);
      continue;
    }
    if (a.rfind("-", 0) == 0) {
      std::cerr << "vigil: unknown option '" << a << "'\nTry 'vigil --help'.\n";
      return kExitUsage;
    }
    break;
  }
  if (i >= argc) {
    usage(std::cerr);
    return kExitUsage;
  }
  // No token given: the admin token vigild keeps in its data directory, when it is readable.
  if (g.token.empty()) g.token = read_token_file(g.token_file);
  auto it = commands().find(argv[i]);
  if (it == commands().end()) {
    std::cerr << "vigil: unknown command '" << argv[i] << "'\nTry 'vigil --help'.\n";
    return kExitUsage;
  }
  try {
    return it->second.run(g, std::vector<std::string>(argv + i + 1, argv + argc));
  } catch (const vigil::client::ServerError& e) {
    std::cerr << "vigil: server refused: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "vigil: " << e.what() << "\n";
  }
  return kExitFailure;
}
