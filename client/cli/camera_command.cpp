#include "client/cli/camera_command.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <pqxx/pqxx>

#include "client/tools/catalog_access.hpp"
#include "catalog/camera_rows.hpp"

namespace vigil::client {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitUnreachable = 3;

constexpr const char* kUsage =
    "Usage: vigil camera add NAME URL [--substream URL] [--data DIR | --db URL]\n"
    "       vigil camera list [--data DIR | --db URL]\n"
    "       vigil camera remove NAME [--data DIR | --db URL]\n\n"
    "Cameras vigild records by pulling them (RTSP over TCP, without decoding): vigild picks up a change\n"
    "within 2 s, restarts a camera that drops with backoff, and records each outage as a gap with its\n"
    "reason. `remove` stops recording; a camera with recordings stays listed (disabled) until they age out.\n\n"
    "  --data DIR   vigild's data directory: its embedded catalog (default ./data)\n"
    "  --db URL     the catalog's PostgreSQL connection string, when vigild runs with --db\n\n"
    "Exit: 0 ok, 1 failed (e.g. no such camera), 2 usage (bad name or URL), 3 catalog unreachable.\n";

}  // namespace

int camera_main(const std::vector<std::string>& args) {
  std::vector<std::string> positional;
  std::string data = "./data", db, substream;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    auto value = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : std::string(); };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kExitOk;
    } else if (a == "--data") data = value();
    else if (a == "--db") db = value();
    else if (a == "--substream") substream = value();
    else if (!a.empty() && a[0] == '-') {
      std::cerr << "vigil camera: unknown option " << a << "\n" << kUsage;
      return kExitUsage;
    } else positional.push_back(a);
  }
  if (positional.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const auto& verb = positional[0];
  const std::size_t want = verb == "add" ? 3 : verb == "remove" ? 2 : verb == "list" ? 1 : 0;
  if (want == 0 || positional.size() != want) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  db = catalog_conninfo(data, db);
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(db);
  } catch (const std::exception& e) {
    std::cerr << "vigil camera: cannot reach the catalog (is vigild running with --data " << data
              << "? or give --db): " << e.what() << "\n";
    return kExitUnreachable;
  }
  try {
    pqxx::work tx(*conn);
    if (verb == "add") {
      std::optional<std::string> sub;
      if (!substream.empty()) sub = substream;
      const auto id = catalog::add_camera(tx, positional[1], positional[2], sub);
      tx.commit();
      std::cout << "camera " << positional[1] << " (id " << id << ") will be recorded from " << positional[2] << "\n";
    } else if (verb == "remove") {
      const bool found = catalog::remove_camera(tx, positional[1]);
      tx.commit();
      if (!found) {
        std::cerr << "vigil camera: no camera named '" << positional[1] << "'\n";
        return kExitFailure;
      }
      std::cout << "camera " << positional[1] << " is no longer recorded\n";
    } else {
      const auto rows = catalog::list_cameras(tx);
      std::cout << std::left << std::setw(20) << "NAME" << std::setw(10) << "ENABLED" << std::setw(28) << "LAST STREAM"
                << "URL\n";
      for (const auto& c : rows) {
        std::string last = c.last_stream_state.empty() ? "-" : c.last_stream_state;
        if (c.last_end_us) last += " " + utc_time(c.last_end_us);
        std::cout << std::setw(20) << c.name << std::setw(10) << (c.enabled ? "yes" : "no") << std::setw(28) << last
                  << (c.url ? *c.url : "(pushed by a recording client)") << "\n";
      }
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "vigil camera: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "vigil camera: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace vigil::client
