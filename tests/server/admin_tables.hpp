#pragma once
// What the admin API tests read of the catalog directly.
#include <pqxx/pqxx>
#include <string>

namespace vigil::test::admin_tables {

// Every row of the tables the admin routes write, as one string: any change changes it.
inline std::string fingerprint(const std::string& db) {
  pqxx::connection conn(db);
  pqxx::read_transaction tx(conn);
  std::string out;
  for (const char* t : {"cameras", "evidence_locks", "streams", "disk_profiles", "disks", "volumes"}) {
    out += tx.exec1(std::string("SELECT count(*)::text || ':' || coalesce(md5(string_agg(x::text, '|' ORDER BY id)), "
                                "'') FROM ") +
                    t + " x")[0]
               .as<std::string>() +
           "/";
  }
  return out;
}

inline std::string scalar(const std::string& db, const std::string& sql) {
  pqxx::connection conn(db);
  pqxx::read_transaction tx(conn);
  auto r = tx.exec1(sql);
  return r[0].is_null() ? "NULL" : r[0].as<std::string>();
}

}  // namespace vigil::test::admin_tables
