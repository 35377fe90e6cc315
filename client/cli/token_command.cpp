#include "client/cli/token_command.hpp"

#include <chrono>
#include <iomanip>
#include <iostream>
#include <optional>
#include <pqxx/pqxx>

#include "client/tools/catalog_access.hpp"
#include "catalog/token_rows.hpp"

namespace vigil::client {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitUnreachable = 3;

constexpr const char* kUsage =
    "Usage: vigil token create --role recorder|viewer|admin [--label TEXT] [--expires-in DAYS] [--data DIR | --db URL]\n"
    "       vigil token list [--data DIR | --db URL]\n"
    "       vigil token revoke ID [--data DIR | --db URL]\n\n"
    "Bearer tokens for vigild's HTTP API and wire protocol. recorder: may record streams and post\n"
    "events; viewer: may play, export and query; admin: everything. `create` prints the token once\n"
    "(only its SHA-256 is stored). A revoked token stops working within 5 s.\n"
    "Clients take a token with --token TOKEN, VIGIL_TOKEN, or --token-file FILE (default: ./data/admin.token,\n"
    "which vigild writes on first start); HTTP clients send 'Authorization: Bearer TOKEN'.\n\n"
    "  --data DIR   vigild's data directory: its embedded catalog (default ./data)\n"
    "  --db URL     the catalog's PostgreSQL connection string, when vigild runs with --db\n\n"
    "Exit: 0 ok, 1 failed (e.g. no such token), 2 usage, 3 catalog unreachable.\n";

}  // namespace

int token_main(const std::vector<std::string>& args) {
  std::vector<std::string> positional;
  std::string data = "./data", db, role, label;
  std::optional<double> expires_days;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    auto value = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : std::string(); };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kExitOk;
    } else if (a == "--data") data = value();
    else if (a == "--db") db = value();
    else if (a == "--role") role = value();
    else if (a == "--label") label = value();
    else if (a == "--expires-in") {
      try {
        expires_days = std::stod(value());
      } catch (const std::exception&) {
        expires_days = -1;
      }
      if (!(*expires_days > 0 && *expires_days <= 36500)) {
        std::cerr << "vigil token: --expires-in takes a number of days (0 < DAYS <= 36500)\n";
        return kExitUsage;
      }
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "vigil token: unknown option " << a << "\n" << kUsage;
      return kExitUsage;
    } else positional.push_back(a);
  }
  const std::string verb = positional.empty() ? "" : positional[0];
  const std::size_t want = verb == "create" ? 1 : verb == "list" ? 1 : verb == "revoke" ? 2 : 0;
  if (want == 0 || positional.size() != want) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  if (verb == "create" && !catalog::is_valid_role(role)) {
    std::cerr << "vigil token: --role must be recorder, viewer or admin\n";
    return kExitUsage;
  }
  std::int64_t revoke_id = 0;
  if (verb == "revoke") {
    try {
      std::size_t used = 0;
      revoke_id = std::stoll(positional[1], &used);
      if (used != positional[1].size() || revoke_id <= 0) throw std::invalid_argument("id");
    } catch (const std::exception&) {
      std::cerr << "vigil token: revoke takes a token id (see vigil token list)\n";
      return kExitUsage;
    }
  }
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(catalog_conninfo(data, db));
  } catch (const std::exception& e) {
    std::cerr << "vigil token: cannot reach the catalog (is vigild running with --data " << data
              << "? or give --db): " << e.what() << "\n";
    return kExitUnreachable;
  }
  try {
    pqxx::work tx(*conn);
    if (verb == "create") {
      std::optional<std::int64_t> expires;
      if (expires_days) {
        const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count();
        expires = now_us + static_cast<std::int64_t>(*expires_days * 86400e6);
      }
      const auto t = catalog::create_token(tx, role, label, expires);
      tx.commit();
      std::cerr << "token " << t.id << " (" << role << ") created; it is shown only this once:\n";
      std::cout << t.token << "\n";
    } else if (verb == "revoke") {
      const bool done = catalog::revoke_token(tx, revoke_id);
      tx.commit();
      if (!done) {
        std::cerr << "vigil token: no live token with id " << revoke_id << "\n";
        return kExitFailure;
      }
      std::cout << "token " << revoke_id << " revoked\n";
    } else {
      std::cout << std::left << std::setw(6) << "ID" << std::setw(10) << "ROLE" << std::setw(22) << "CREATED"
                << std::setw(22) << "EXPIRES" << std::setw(22) << "REVOKED" << "LABEL\n";
      for (const auto& t : catalog::list_tokens(tx)) {
        std::cout << std::setw(6) << t.id << std::setw(10) << t.role << std::setw(22) << utc_time(t.created_at_us)
                  << std::setw(22) << (t.expires_at_us ? utc_time(*t.expires_at_us) : "-") << std::setw(22)
                  << (t.revoked_at_us ? utc_time(*t.revoked_at_us) : "-") << t.label << "\n";
      }
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "vigil token: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "vigil token: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace vigil::client
