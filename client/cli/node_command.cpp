#include "client/cli/node_command.hpp"

#include <boost/json.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "client/cli/vigild_api.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;
namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil node",
    "Usage: vigil [--token TOKEN] node list\n"
    "       vigil [--token TOKEN] node drain NAME [--timeout S]\n"
    "       vigil [--token TOKEN] node undrain NAME\n"
    "       (each with [--data DIR | --http HOST:PORT]: any node of the catalog answers)\n\n"
    "The vigild nodes sharing one catalog (docs/nodes.md). `drain` moves every camera node NAME\n"
    "pulls to the other nodes without a gap: another node records each camera beside it, and NAME\n"
    "stops only once that node's first frames are stored. It prints the cameras moved and waits until\n"
    "NAME owns none (drained) or --timeout S (default 120) passes. A drained or draining node takes no\n"
    "new camera until `undrain`. A drain with no other live node is refused and changes nothing.\n",
    "\nExit: 0 ok, 1 failed (no such node, nobody to drain to, timed out), 2 usage, 3 vigild\n"
    "unreachable, 4 refused: the token is not an admin's.\n"};

int list_nodes(HttpClient& api) {
  const auto answer = api.request(http::verb::get, "/api/v1/nodes");
  if (answer.status != 200) return exit_for_answer(kHelp.command, answer, "a viewer or admin");
  std::cout << std::left << std::setw(20) << "NODE" << std::setw(10) << "STATE" << std::setw(6) << "LIVE"
            << std::setw(9) << "CAMERAS" << std::setw(11) << "HANDOVERS"
            << "HEADROOM_MBPS\n";
  const auto doc = json::parse(answer.body);
  for (const auto& v : doc.at("nodes").as_array()) {
    const auto& n = v.as_object();
    std::cout << std::setw(20) << n.at("node").as_string().c_str() << std::setw(10) << n.at("state").as_string().c_str()
              << std::setw(6) << (n.at("live").as_bool() ? "yes" : "no") << std::setw(9)
              << n.at("cameras").to_number<std::int64_t>() << std::setw(11)
              << n.at("handovers").to_number<std::int64_t>() << std::fixed << std::setprecision(1)
              << static_cast<double>(n.at("headroom_bps").to_number<std::int64_t>()) / 1e6 << "\n";
  }
  return exit_code::kOk;
}

int drain_node(HttpClient& api, const std::string& name, std::chrono::seconds timeout) {
  const auto path = "/api/v1/nodes/" + name;
  const auto started = api.request(http::verb::post, path + "/drain");
  if (started.status != 200) return exit_for_answer(kHelp.command, started);
  const auto total = json::parse(started.body).at("cameras").to_number<std::int64_t>();
  std::cout << "draining node " << name << ": " << total << " camera(s) to move" << std::endl;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::int64_t shown = -1;
  for (;;) {
    const auto answer = api.request(http::verb::get, path);
    if (answer.status != 200) return exit_for_answer(kHelp.command, answer);
    const auto node = json::parse(answer.body).as_object();
    const auto left = node.at("cameras").to_number<std::int64_t>();
    const auto moved = std::max<std::int64_t>(total - left, 0);
    if (moved != shown) {
      std::cout << "moved " << moved << "/" << total << " cameras" << std::endl;
      shown = moved;
    }
    if (node.at("state").as_string() == "drained") {
      std::cout << "node " << name << " drained: it records no camera and takes none until `vigil node undrain " << name
                << "`" << std::endl;
      return exit_code::kOk;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::cerr << kHelp.command << ": drain of node " << name << " not done after " << timeout.count()
                << " s: " << moved << " of " << total << " cameras moved (" << left
                << " left: does another node have room, and can it reach them?); the node stays draining "
                   "(vigil node undrain "
                << name << " takes it back)\n";
      return exit_code::kFailed;
    }
    // A person waits on this: twice a second is plenty, and the API is any node's.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

int undrain_node(HttpClient& api, const std::string& name) {
  const auto answer = api.request(http::verb::post, "/api/v1/nodes/" + name + "/undrain");
  if (answer.status != 200) return exit_for_answer(kHelp.command, answer);
  const auto cancelled = json::parse(answer.body).at("handovers_cancelled").to_number<std::int64_t>();
  std::cout << "node " << name << " takes cameras again";
  if (cancelled > 0) std::cout << " (" << cancelled << " handover(s) in progress cancelled)";
  std::cout << "\n";
  return exit_code::kOk;
}

}  // namespace

int node_main(const std::string& token, const std::vector<std::string>& args) {
  VigildApiOptions where;
  int timeout_s = 120;
  po::options_description options("Options");
  add_vigild_api_options(options, where);
  options.add_options()  //
      ("timeout", po::value(&timeout_s)->value_name("S"), "drain: give up waiting after S seconds (default 120)");
  std::vector<std::string> words;
  if (auto rc = parse_command_line(args, options, kHelp, &words, 2)) return *rc;
  const std::string verb = words.empty() ? "" : words[0];
  const std::size_t want = verb == "list" ? 1 : verb == "drain" || verb == "undrain" ? 2 : 0;
  if (want == 0) return usage_error(kHelp, "say list, drain or undrain");
  if (words.size() != want) return usage_error(kHelp, verb + " takes " + std::to_string(want - 1) + " argument(s)");
  if (timeout_s <= 0) return usage_error(kHelp, "--timeout takes a positive number of seconds");
  try {
    auto api = connect_vigild_api(where, token);
    if (verb == "list") return list_nodes(api);
    if (verb == "drain") return drain_node(api, words[1], std::chrono::seconds(timeout_s));
    return undrain_node(api, words[1]);
  } catch (const VigildUnreachable& e) {
    std::cerr << kHelp.command << ": " << e.what() << "\n";
    return exit_code::kUnreachable;
  }
}

}  // namespace vigil::client
