// vigil: the command-line client. It speaks only the wire protocol (proto/) and HTTP.
// Errors: each command returns an exit code (common/exit_codes.hpp); an exception that escapes
// one is caught here and printed as one line.
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <boost/program_options/variables_map.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "client/cli/camera_command.hpp"
#include "client/cli/ingest_command.hpp"
#include "client/cli/play_command.hpp"
#include "client/cli/record_command.hpp"
#include "client/cli/query_command.hpp"
#include "client/cli/node_command.hpp"
#include "client/cli/token_command.hpp"
#include "client/proxy/proxy_command.hpp"
#include "client/tools/catalog_command.hpp"
#include "client/tools/fsck_command.hpp"
#include "client/tools/profile_command.hpp"
#include "client/wire/wire_client.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"

namespace po = boost::program_options;

namespace {

struct Globals {
  std::string server = "127.0.0.1:7070";
  std::string token;       // given: --token, --token-file or VIGIL_TOKEN; empty: none given
  std::string token_file;  // --token-file FILE
  std::string tls_ca;
  bool help = false, version = false;

  // The token of a wire-protocol command: the one given, else the admin token vigild keeps in
  // its data directory, when it is readable from here.
  std::string wire_token() const {
    if (!token.empty() || !token_file.empty()) return token;
    return first_word("data/admin.token");
  }

  static std::string first_word(const std::string& file) {
    std::ifstream in(file);
    std::string word;
    in >> word;
    return word;
  }
};

struct Command {
  std::string summary;
  std::function<int(const Globals&, const std::vector<std::string>&)> run;
};

int cmd_status(const Globals& g, const std::vector<std::string>& args) {
  static constexpr vigil::CommandHelp kHelp{
      "vigil status",
      "Usage: vigil [--server HOST:PORT] status\n\nConnects to vigild and shows its version and "
      "protocol limits.\n",
      "\nExit: 0 ok, 3 server unreachable.\n"};
  if (auto rc = vigil::parse_command_line(args, po::options_description("Options"), kHelp)) return *rc;
  std::unique_ptr<vigil::client::WireClient> client;
  try {
    client = std::make_unique<vigil::client::WireClient>(g.server, std::chrono::seconds(10));
  } catch (const std::exception& e) {
    std::cerr << "vigil: " << e.what() << "\n";
    return vigil::exit_code::kUnreachable;
  }
  auto reply = client->hello("vigil-cli", g.wire_token());
  std::cout << "server:            " << g.server << "\n"
            << "version:           " << reply.server_version() << "\n"
            << "protocol:          " << reply.protocol_version() << "\n"
            << "max payload bytes: " << reply.max_frame_bytes() << "\n"
            << "session:           " << reply.session_id() << "\n";
  return vigil::exit_code::kOk;
}

const std::map<std::string, Command>& commands() {
  using namespace vigil;
  static const std::map<std::string, Command> table{
      {"bench",
       {"run a benchmark: vigil bench NAME [--quick] [--json FILE] (vigil bench --help lists them)",
        [](const Globals&, const auto& args) { return bench::bench_main(args); }}},
      {"camera",
       {"cameras vigild pulls: vigil camera add NAME URL | list | remove NAME | discover [--data DIR | --http HOST:PORT]",
        [](const Globals& g, const auto& args) { return client::camera_main(g.token, args); }}},
      {"catalog",
       {"rebuild the catalog from volumes alone: vigil catalog rebuild --volume V [--volume V ...] --db URL",
        [](const Globals&, const auto& args) { return client::catalog_main(args); }}},
      {"fsck",
       {"check a volume offline: vigil fsck VOLUME [--db URL] [--repair]",
        [](const Globals&, const auto& args) { return client::fsck_main(args); }}},
      {"node",
       {"the nodes sharing a catalog: vigil node list | drain NAME [--timeout S] | undrain NAME [--http HOST:PORT]",
        [](const Globals& g, const auto& args) { return client::node_main(g.token, args); }}},
      {"play",
       {"play a recorded range to a file or stdout: vigil play --stream NAME --from TIME [--to TIME] -o FILE|-",
        [](const Globals& g, const auto& args) { return client::play_main(g.server, g.wire_token(), args); }}},
      {"proxy",
       {"playback proxy for many viewers: vigil proxy --upstream HOST:PORT[,...] [--listen ADDR:PORT] [--cache-mb N]",
        [](const Globals& g, const auto& args) { return client::proxy_main(args, g.token); }}},
      {"ingest",
       {"an ingest worker of vigild's camera manager (started by vigild): vigil ingest --control-fd N",
        [](const Globals& g, const auto& args) { return client::ingest_main(g.server, g.wire_token(), args); }}},
      {"query",
       {"find events and save their clips: vigil query [--camera NAME] [--from TIME] [--type T] [--class C] [--clips DIR]",
        [](const Globals& g, const auto& args) { return client::query_main(g.token, args); }}},
      {"record",
       {"record a camera or file into vigild: vigil record --stream NAME INPUT [--rate MBPS] [--duration S]",
        [](const Globals& g, const auto& args) { return client::record_main(g.server, g.wire_token(), args); }}},
      {"profile",
       {"measure a disk for admission: vigil profile TARGET|sim:PRESET [--quick]; vigil profile show FILE",
        [](const Globals&, const auto& args) { return client::profile_main(args); }}},
      {"status", {"connect to vigild and show its version and protocol limits", cmd_status}},
      {"token",
       {"API tokens: vigil token create --role recorder|viewer|admin | list | revoke ID [--data DIR | --http HOST:PORT]",
        [](const Globals& g, const auto& args) { return client::token_main(g.token, args); }}},
  };
  return table;
}

po::options_description global_options(Globals& g) {
  po::options_description o("Options");
  o.add_options()  //
      ("server", po::value(&g.server)->value_name("HOST:PORT"),
       "vigild's wire-protocol address (env VIGIL_SERVER; default 127.0.0.1:7070); tls://HOST:PORT for a vigild "
       "started with --tls-cert")  //
      ("tls-ca", po::value(&g.tls_ca)->value_name("FILE"),
       "PEM certificate(s) to trust for tls:// and https:// (env VIGIL_TLS_CA; default: the system's)")  //
      ("token", po::value(&g.token)->value_name("TOKEN"), "access token (env VIGIL_TOKEN)")              //
      ("token-file", po::value(&g.token_file)->value_name("FILE"),
       "read the token from FILE (default: data/admin.token, written by vigild)")  //
      ("help,h", po::bool_switch(&g.help), "show this help")                       //
      ("version", po::bool_switch(&g.version), "print the version");
  return o;
}

void usage(std::ostream& out, const po::options_description& options) {
  out << "vigil " VIGIL_VERSION " - command-line client for the Vigil video storage server\n\n"
      << "Usage: vigil [--server HOST:PORT] [--token TOKEN] COMMAND [ARGS...]   (vigil COMMAND --help)\n\n"
      << "Commands:\n";
  for (const auto& [name, cmd] : commands())
    out << "  " << name << std::string(12 - name.size(), ' ') << cmd.summary << "\n";
  out << "\n"
      << options << "\nExit codes: 0 ok, 1 failed, 2 usage error, 3 server unreachable, 4 refused (by admission, or\n"
      << "the token lacks the role), 5 nothing recorded in the range.\n";
}

// Where the command's name is in ARGV: the first word that is neither a global option nor the
// value of one (the command's own options come after it).
int command_index(int argc, char** argv, const po::options_description& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (!a.starts_with("-") || a == "-") return i;
    if (a.find('=') != std::string::npos) continue;
    const auto* od = options.find_nothrow(a.substr(a.starts_with("--") ? 2 : 1), false);
    if (od && od->semantic()->max_tokens() > 0) ++i;
  }
  return argc;
}

}  // namespace

int main(int argc, char** argv) {
  Globals g;
  if (const char* env = std::getenv("VIGIL_SERVER"); env && *env) g.server = env;
  const auto options = global_options(g);
  const int at = command_index(argc, argv, options);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(std::vector<std::string>(argv + 1, argv + at))
                  .options(options)
                  .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "vigil: " << e.what() << "\nTry 'vigil --help'.\n";
    return vigil::exit_code::kUsage;
  }
  if (g.help || g.version) {
    if (g.help) usage(std::cout, options);
    else std::cout << "vigil " VIGIL_VERSION "\n";
    return vigil::exit_code::kOk;
  }
  if (!g.tls_ca.empty()) ::setenv("VIGIL_TLS_CA", g.tls_ca.c_str(), 1);  // read by every wire and https connection
  // A token given on the command line, else a --token-file, else VIGIL_TOKEN.
  if (g.token.empty() && !g.token_file.empty()) g.token = Globals::first_word(g.token_file);
  if (g.token.empty() && g.token_file.empty()) {
    if (const char* env = std::getenv("VIGIL_TOKEN"); env && *env) g.token = env;
  }
  if (at >= argc) {
    usage(std::cerr, options);
    return vigil::exit_code::kUsage;
  }
  auto it = commands().find(argv[at]);
  if (it == commands().end()) {
    std::cerr << "vigil: unknown command '" << argv[at] << "'\nTry 'vigil --help'.\n";
    return vigil::exit_code::kUsage;
  }
  try {
    return it->second.run(g, std::vector<std::string>(argv + at + 1, argv + argc));
  } catch (const vigil::client::ServerError& e) {
    std::cerr << "vigil: server refused: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "vigil: " << e.what() << "\n";
  }
  return vigil::exit_code::kFailed;
}
