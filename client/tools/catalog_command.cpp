#include "client/tools/catalog_command.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <pqxx/pqxx>

#include "catalog/migrator.hpp"
#include "catalog/volume_reconcile.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"
#include "storage/file_device.hpp"
#include "storage/volume.hpp"

namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil catalog",
    "Usage: vigil catalog rebuild --volume VOLUME [--volume VOLUME ...] --db URL\n\n"
    "Rebuilds the catalog from the volumes alone (stop vigild first; the volumes are locked while\n"
    "in use): each volume and its disk registered, each stream (one per stream id) and its camera\n"
    "from the description in its segment headers (codec, extradata, dimensions, time base), its\n"
    "segments with their extents and GOP index, gaps for damaged spans and for holes between a\n"
    "camera's streams. Creates the schema in an empty database. What the catalog already has is\n"
    "kept: running it again changes nothing. Segments written before headers carried descriptions\n"
    "are rebuilt under a camera named unknown-stream-ID, with a warning.\n"
    "The embedded catalog (vigild without --db) needs no command: vigild rebuilds an empty or\n"
    "deleted catalog from its volumes at start.\n",
    "\nExit: 0 rebuilt (or nothing to do), 1 failed part-way, 2 usage, 3 a volume or the catalog\n"
    "cannot be used.\n"};

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Opened {
  std::string path;
  std::unique_ptr<storage::FileDevice> device;
  std::unique_ptr<storage::Volume> volume;
};

struct Totals {
  std::size_t segments = 0, kept = 0, reclaimed = 0;
  std::uint64_t frames = 0;
  std::set<std::int64_t> streams;
  std::set<std::string> cameras;
};

void report_volume(const Opened& v, std::int64_t volume_id, bool registered, const catalog::Reconciled& r,
                   Totals& totals) {
  std::uint64_t frames = 0;
  for (const auto& s : r.plan.adopt) frames += s.frame_count;
  std::cout << v.path << ": volume " << storage::uuid_text(v.volume->superblock().volume_uuid) << ", catalog id "
            << volume_id << (registered ? " (registered now)" : "") << "; " << r.found.size() << " segment(s), "
            << r.scanned << " read, " << r.trusted << " already in the catalog\n";
  for (const auto& s : r.rebuilt) {
    const auto& d = s.description;
    std::cout << "  stream " << s.stream_id << ": camera " << d.camera << ", " << d.codec;
    if (d.width > 0) std::cout << " " << d.width << "x" << d.height;
    std::cout << ", " << s.segments << " segment(s), " << s.frames << " frame(s)\n";
    if (!s.warning.empty()) {
      std::cout << "  warning: stream " << s.stream_id << " kept under camera " << d.camera << ": " << s.warning
                << "\n";
    }
    totals.streams.insert(s.stream_id);
    totals.cameras.insert(d.camera);
  }
  std::cout << "  adopted " << r.plan.adopt.size() << " segment(s) with " << frames << " frame(s)";
  if (!r.plan.kept.empty()) std::cout << "; kept " << r.plan.kept.size() << " unreadable (vigil fsck " << v.path << ")";
  if (!r.plan.reclaim.empty()) std::cout << "; freed " << r.plan.reclaim.size() << " without frames";
  std::cout << "\n";
  totals.segments += r.plan.adopt.size();
  totals.frames += frames;
  totals.kept += r.plan.kept.size();
  totals.reclaimed += r.plan.reclaim.size();
}

int rebuild(const std::vector<std::string>& paths, const std::string& db) {
  // Every volume opened (and locked) before the catalog is touched: a volume in use by vigild
  // stops the command before it changes anything.
  std::vector<Opened> volumes;
  for (const auto& given : paths) {
    Opened v;
    v.path = std::filesystem::absolute(given).string();
    auto dev = storage::FileDevice::open(v.path, {.exclusive = true});
    if (!dev) {
      std::cerr << "vigil catalog rebuild: cannot open " << v.path << ": " << dev.error().message()
                << (dev.error() == errc::busy ? " (is vigild running with this volume? stop it first)" : "") << "\n";
      return exit_code::kUnreachable;
    }
    v.device = std::move(*dev);
    auto vol = storage::Volume::open(*v.device);
    if (!vol) {
      std::cerr << "vigil catalog rebuild: " << v.path << " is not a readable Vigil volume: " << vol.error().message()
                << " (vigil fsck " << v.path << ")\n";
      return exit_code::kUnreachable;
    }
    v.volume = std::move(*vol);
    volumes.push_back(std::move(v));
  }
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(db);
    const auto migrated = catalog::migrate(*conn);
    if (!migrated.applied.empty()) std::cout << "catalog: schema created or updated\n";
  } catch (const std::exception& e) {
    std::cerr << "vigil catalog rebuild: catalog: " << e.what() << "\n";
    return exit_code::kUnreachable;
  }
  Totals totals;
  std::set<std::int64_t> rebuilt;
  int gaps = 0;
  try {
    for (auto& v : volumes) {
      std::cout << v.path << ": reading the segments the catalog does not have...\n" << std::flush;
      std::int64_t volume_id = 0;
      bool registered = false;
      {
        pqxx::work tx(*conn);
        registered = !catalog::find_volume(tx, *v.volume).has_value();
        volume_id = catalog::register_volume(tx, *v.volume, v.path);
        tx.commit();
      }
      const auto r = catalog::reconcile_volume(*conn, *v.volume, volume_id, now_us());
      report_volume(v, volume_id, registered, r, totals);
      for (const auto& s : r.rebuilt) rebuilt.insert(s.stream_id);
    }
    gaps = catalog::write_rebuild_gaps(*conn, rebuilt);
  } catch (const std::exception& e) {
    // What was committed stays (each volume is one transaction); running again finishes the rest.
    std::cerr << "vigil catalog rebuild: " << e.what() << " (run it again to finish)\n";
    return exit_code::kFailed;
  }
  std::cout << "rebuilt: " << totals.segments << " segment(s), " << totals.streams.size() << " stream(s), "
            << totals.cameras.size() << " camera(s), " << totals.frames << " frame(s), " << gaps
            << " gap(s) between streams, from " << volumes.size() << " volume(s)";
  if (totals.segments == 0 && totals.streams.empty()) std::cout << " (the catalog already indexes these volumes)";
  std::cout << "\n";
  if (totals.kept) std::cout << "warning: " << totals.kept << " unreadable segment(s) kept for vigil fsck\n";
  return exit_code::kOk;
}

}  // namespace

int catalog_main(const std::vector<std::string>& args) {
  std::vector<std::string> volumes;
  std::string db;
  po::options_description options("Options");
  options.add_options()                                                                                  //
      ("volume", po::value(&volumes)->value_name("PATH"), "a volume to rebuild from (repeat for each)")  //
      ("db", po::value(&db)->value_name("URL"),
       "PostgreSQL connection string of the catalog (as given to vigild --db)");
  std::vector<std::string> words;
  if (auto rc = parse_command_line(args, options, kHelp, &words, 1)) return *rc;
  if (words.empty() || words.front() != "rebuild") return usage_error(kHelp, "the only subcommand is rebuild");
  if (volumes.empty()) return usage_error(kHelp, "give at least one --volume");
  if (db.empty()) {
    return usage_error(kHelp,
                       "--db URL is required (the embedded catalog is rebuilt by vigild itself: start it with its "
                       "--data DIR and --volume options)");
  }
  return rebuild(volumes, db);
}

}  // namespace vigil::client
