// vigild: entry point. Parses flags, runs the daemon, and turns any start-up failure into
// one clear line on stderr and a non-zero exit (never a stack trace).
#include <iostream>
#include <pqxx/except>

#include "catalog/migrator.hpp"
#include "common/page_memory.hpp"
#include "server/app/config.hpp"
#include "server/app/daemon.hpp"

namespace {

std::string first_line(std::string_view s) {
  auto end = s.find('\n');
  std::string line(s.substr(0, end));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = vigil::server::parse_server_args(argc, argv);
  if (!parsed.config) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.output;
    return parsed.exit_code;
  }
  vigil::page_memory::return_large_blocks();  // media frames pass through all day
  try {
    return vigil::server::run_daemon(*parsed.config);
  } catch (const pqxx::broken_connection& e) {
    std::cerr << "vigild: cannot connect to the database: " << first_line(e.what()) << "\n";
  } catch (const vigil::catalog::SchemaTooNew& e) {
    std::cerr << "vigild: " << first_line(e.what()) << "\n";
  } catch (const pqxx::failure& e) {
    std::cerr << "vigild: database error: " << first_line(e.what()) << "\n";
  } catch (const std::exception& e) {
    // May carry a few lines of a child's log (initdb, postgres): print it whole.
    std::cerr << "vigild: " << e.what() << (std::string_view(e.what()).ends_with('\n') ? "" : "\n");
  }
  return 1;
}
