// Disk profiles and admission decisions in a real PostgreSQL: a profile is stored against its
// disk (registered on first sight) and the newest one comes back intact; a refusal is logged
// with its reason and the largest rate that would have fitted.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/migrator.hpp"
#include "catalog/profiles.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

TEST_CASE("profiles are stored per disk and the newest is loaded; decisions are audited", "[catalog][admission]") {
  pqxx::connection conn(test::shared_cluster().create_database("profiles"));
  catalog::migrate(conn);
  admission::DiskProfile p;
  p.device = "/dev/sdz";
  p.device_bytes = 40'000'000'000;
  p.random_read = {{64e3, 1e6}, {5e6, 20e6}, {6e6, 25e6}, {7e6, 27e6}};
  p.random_write = p.random_read;
  p.seq_read = {{64e3, 1e6}, {30e6, 30e6}, {30e6, 30e6}, {30e6, 30e6}};
  p.seq_write = p.seq_read;
  p.read_range = p.write_range = admission::near_peak_range(p.seq_read);
  p.access_max_s = 0.02;
  std::int64_t first = 0, second = 0, disk = 0;
  {
    pqxx::work tx(conn);
    first = catalog::store_profile(tx, p, "node1");
    p.access_max_s = 0.03;  // measured again later
    second = catalog::store_profile(tx, p, "node1");
    disk = tx.exec1("SELECT disk_id FROM disk_profiles WHERE id = " + std::to_string(second))[0].as<std::int64_t>();
    CHECK(tx.exec1("SELECT count(*) FROM disks")[0].as<int>() == 1);  // the same disk both times
    CHECK(
        tx.exec1("SELECT peak_rate_bps FROM disk_profiles WHERE id = " + std::to_string(first))[0].as<std::int64_t>() ==
        240'000'000);
    auto latest = catalog::latest_profile(tx, disk);
    REQUIRE(latest.has_value());
    CHECK(latest->access_max_s == 0.03);
    CHECK(latest->random_read.mean == p.random_read.mean);
    CHECK_FALSE(catalog::latest_profile(tx, disk + 100).has_value());

    admission::AdmissionController adm(*latest, {.policy = admission::Policy::conservative, .r_rt = 1});
    std::vector<admission::StreamDemand> set(19, {1, false, vigil::Rate::from_Bps(1e6), {}, {}, {}});
    const auto d = adm.decide(set, {20, false, vigil::Rate::from_Bps(3e6), {}, {}, {}});
    REQUIRE_FALSE(d.admitted);
    const auto id = catalog::log_decision(tx, d, disk, std::nullopt, 1.0);
    auto row = tx.exec1(
        "SELECT outcome, policy, reason, max_admissible_rate_bps, requested_rate_bps, admitted_rate_bps "
        "IS NULL FROM admission_decisions WHERE id = " +
        std::to_string(id));
    CHECK(row[0].as<std::string>() == "refused");
    CHECK(row[1].as<std::string>() == "conservative");
    CHECK(row[2].as<std::string>() == d.reason);
    CHECK(row[3].as<std::int64_t>() == static_cast<std::int64_t>(d.max_rate.bps()));
    CHECK(row[4].as<std::int64_t>() == 24'000'000);
    CHECK(row[5].as<bool>());
    const auto ok = adm.decide({}, {1, false, vigil::Rate::from_Bps(1e6), {}, {}, {}});
    REQUIRE(ok.admitted);
    const auto id2 = catalog::log_decision(tx, ok, disk, std::nullopt, 1.0);
    CHECK(tx.exec1("SELECT admitted_rate_bps FROM admission_decisions WHERE id = " + std::to_string(id2))[0]
              .as<std::int64_t>() == 8'000'000);
    tx.commit();
  }
}
