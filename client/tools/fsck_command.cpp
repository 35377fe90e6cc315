#include "client/tools/fsck_command.hpp"

#include <chrono>
#include <iostream>
#include <map>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <pqxx/pqxx>

#include "common/command_line.hpp"
#include "common/exit_codes.hpp"

#include "catalog/volume_reconcile.hpp"
#include "storage/file_device.hpp"
#include "storage/fsck.hpp"
#include "storage/volume.hpp"

namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil fsck",
    "Usage: vigil fsck VOLUME [--db URL] [--repair]\n\n"
    "Verifies a volume offline (stop vigild first; the volume is locked while in use):\n"
    "superblock, extent headers, segment headers and the CRC of every record.\n"
    "With --db, also checks the catalog against the volume: segments on disk the catalog does not\n"
    "index, catalog segments whose data is missing, closed segments whose frame count or end\n"
    "differs, segments left open by an unclean stop.\n",
    "\nExit: 0 clean, 1 problems found, 2 usage, 3 cannot open the volume or the catalog.\n"};

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Catalog half of fsck. Returns the number of serious problems, or -1 if the catalog is unusable.
int check_catalog(storage::Volume& volume, const std::string& path, const std::string& db, bool repair) {
  try {
    pqxx::connection conn(db);
    std::optional<std::int64_t> volume_id;
    std::vector<catalog::CatalogProblem> problems;
    {
      pqxx::work tx(conn);
      volume_id = catalog::find_volume(tx, volume);
      if (!volume_id) {
        std::cout << "catalog: volume " << storage::uuid_text(volume.superblock().volume_uuid)
                  << " is not registered (vigild registers it when started with --volume " << path << ")\n";
        return 0;
      }
      problems = catalog::check_against_catalog(tx, catalog::scan_volume(volume), *volume_id);
    }
    int serious = 0;
    for (const auto& p : problems) {
      std::cout << "catalog: " << p.describe() << "\n";
      serious += p.serious() ? 1 : 0;
    }
    std::cout << "catalog: volume id " << *volume_id << "; " << serious << " problem(s)";
    if (problems.size() > static_cast<std::size_t>(serious)) {
      std::cout << ", " << problems.size() - static_cast<std::size_t>(serious) << " left by an unclean stop";
    }
    std::cout << "\n";
    if (repair && !problems.empty()) {
      auto r = catalog::reconcile_volume(conn, volume, *volume_id, now_us(),
                                         {.reclaim_unreadable = true, .full_scan = true});
      std::cout << "repair: catalog reconciled: " << r.plan.close.size() << " closed, " << r.plan.adopt.size()
                << " adopted, " << r.plan.lost.size() << " marked damaged, " << r.plan.reclaim.size() << " reclaimed\n";
    }
    return serious;
  } catch (const std::exception& e) {
    std::cerr << "vigil fsck: catalog: " << e.what() << "\n";
    return -1;
  }
}

}  // namespace

int fsck_main(const std::vector<std::string>& args) {
  std::string db;
  bool repair = false;
  po::options_description options("Options");
  options.add_options()  //
      ("db", po::value(&db)->value_name("URL"),
       "PostgreSQL connection string of the catalog (as given to vigild --db)")  //
      ("repair", po::bool_switch(&repair),
       "volume: reclaim segments with unreadable headers; with --db also reconcile the catalog as vigild does at "
       "start (adopt orphans, mark missing data damaged with a gap)");
  std::vector<std::string> words;
  if (auto rc = parse_command_line(args, options, kHelp, &words, 1)) return *rc;
  if (words.empty()) return usage_error(kHelp, "VOLUME is required");
  const std::string& path = words.front();
  auto dev = storage::FileDevice::open(path, {.exclusive = true});
  if (!dev) {
    std::cerr << "vigil fsck: cannot open " << path << ": " << dev.error().message()
              << (dev.error() == errc::busy ? " (is vigild running with this volume? stop it first)" : "") << "\n";
    return exit_code::kUnreachable;
  }
  auto vol = storage::Volume::open(**dev);
  if (!vol) {
    std::cerr << "vigil fsck: " << path << " is not a readable Vigil volume: " << vol.error().message() << "\n";
    return exit_code::kUnreachable;
  }
  auto report = storage::check_volume(**vol);
  if (!report) {
    std::cerr << "vigil fsck: reading " << path << " failed: " << report.error().message() << "\n";
    return exit_code::kUnreachable;
  }
  // With the catalog: what lies after a closed segment's catalogued end is the rest of a failed
  // batch that landed in part — never acknowledged, never served (readers stop at the row's end) —
  // not lost frames.
  std::map<std::uint64_t, std::uint64_t> catalog_ends;
  if (!db.empty()) {
    try {
      pqxx::connection conn(db);
      pqxx::work tx(conn);
      if (auto id = catalog::find_volume(tx, **vol)) catalog_ends = catalog::closed_segment_ends(tx, *id);
    } catch (const std::exception& e) {
      std::cerr << "vigil fsck: catalog: " << e.what() << "\n";
      return exit_code::kUnreachable;
    }
  }
  std::size_t serious = 0, torn = 0, past_end = 0;
  for (const auto& p : report->problems) {
    const auto end = catalog_ends.find(p.segment_id);
    const bool after_end =
        (p.kind == storage::ProblemKind::damaged_records || p.kind == storage::ProblemKind::torn_tail) &&
        end != catalog_ends.end() && p.logical_offset >= end->second;
    std::cout << p.describe();
    if (after_end) std::cout << " (after the catalog's end of the segment: a failed batch, never acknowledged)";
    std::cout << "\n";
    if (after_end) ++past_end;
    else if (p.kind == storage::ProblemKind::torn_tail) ++torn;
    else ++serious;
  }
  std::cout << path << ": " << report->segments << " segments, " << report->records << " records, " << report->bytes
            << " bytes checked; " << serious << " problem(s)";
  if (torn) std::cout << ", " << torn << " torn tail(s) from unclean stops";
  if (past_end) std::cout << ", " << past_end << " failed batch(es) after their segment's catalogued end";
  std::cout << "\n";
  if (repair && report->serious()) {
    auto fixed = storage::repair_volume(**vol, *report);
    if (!fixed) {
      std::cerr << "vigil fsck: repair failed: " << fixed.error().message() << "\n";
      return exit_code::kFailed;
    }
    std::cout << "repair: reclaimed " << *fixed << " segment(s) with unreadable headers\n";
  }
  int catalog_problems = 0;
  if (!db.empty()) {
    catalog_problems = check_catalog(**vol, path, db, repair);
    if (catalog_problems < 0) return exit_code::kUnreachable;
  }
  return serious || catalog_problems ? exit_code::kFailed : exit_code::kOk;
}

}  // namespace vigil::client
