#include "catalog/volume_reconcile.hpp"

#include <unistd.h>

#include <map>
#include <pqxx/pqxx>
#include <stdexcept>

#include "catalog/profiles.hpp"
#include "storage/retention.hpp"

namespace vigil::catalog {

std::optional<std::int64_t> find_volume(pqxx::work& tx, const storage::Volume& volume) {
  auto found = tx.exec_params("SELECT id FROM volumes WHERE volume_uuid = $1::uuid",
                              storage::uuid_text(volume.superblock().volume_uuid));
  if (found.empty()) return std::nullopt;
  return found[0][0].as<std::int64_t>();
}

std::int64_t register_volume(pqxx::work& tx, const storage::Volume& volume, const std::string& path,
                             const std::string& node) {
  if (auto id = find_volume(tx, volume)) return *id;
  const auto& sb = volume.superblock();
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const auto capacity = static_cast<std::int64_t>(sb.extent_offset(sb.extent_count));
  auto disk = tx.exec_params1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ($1, $2, $3) RETURNING id",
                              node.empty() ? std::string(host) : node, path, capacity)[0]
                  .as<std::int64_t>();
  return tx
      .exec_params1(
          "INSERT INTO volumes (disk_id, volume_uuid, path, capacity_bytes, block_bytes, extent_bytes) "
          "VALUES ($1, $2::uuid, $3, $4, $5, $6) RETURNING id",
          disk, storage::uuid_text(sb.volume_uuid), path, capacity, static_cast<int>(sb.block_bytes),
          static_cast<std::int64_t>(sb.extent_bytes))[0]
      .as<std::int64_t>();
}

namespace {

std::set<std::int64_t> known_streams(pqxx::work& tx) {
  std::set<std::int64_t> out;
  for (const auto& row : tx.exec("SELECT id FROM streams")) out.insert(row[0].as<std::int64_t>());
  return out;
}

}  // namespace

Reconciled reconcile_volume(pqxx::connection& conn, storage::Volume& volume, std::int64_t volume_id,
                            std::int64_t restart_us, ReconcileOptions options) {
  Reconciled r;
  {
    pqxx::work tx(conn);
    const auto trusted = options.full_scan ? std::set<std::uint64_t>{} : trusted_segments(tx, volume, volume_id);
    r.found = catalog::scan_volume(volume, trusted);
    r.trusted = trusted.size();
    r.scanned = r.found.size() - trusted.size();
    // A stream the catalog lacks (a new or emptied catalog, a lost row) is rebuilt from its
    // segments' headers, so they are adopted: readable video is never reclaimed for want of a row.
    auto known = known_streams(tx);
    r.rebuilt = plan_stream_rebuild(r.found, known);
    if (!r.rebuilt.empty()) {
      apply_stream_rebuild(tx, r.rebuilt, disk_of_volume(tx, volume_id));
      for (const auto& s : r.rebuilt) known.insert(s.stream_id);
    }
    r.plan =
        catalog::plan_recovery(r.found, catalog::catalog_segments(tx, volume_id), known, options.reclaim_unreadable);
    catalog::apply_recovery_plan(tx, volume_id, r.plan, restart_us);
    tx.commit();
  }
  // Space is reclaimed only after the catalog no longer points at it.
  for (auto id : r.plan.reclaim) {
    if (auto done = storage::reclaim_segment(volume, id); !done) {
      throw std::runtime_error("reclaiming segment " + std::to_string(id) + ": " + done.error().message());
    }
  }
  return r;
}

int write_rebuild_gaps(pqxx::connection& conn, const std::set<std::int64_t>& rebuilt) {
  if (rebuilt.empty()) return 0;
  pqxx::work tx(conn);
  const int n = write_rebuild_gaps(tx, rebuilt);
  tx.commit();
  return n;
}

const char* catalog_problem_name(CatalogProblem::Kind k) noexcept {
  switch (k) {
    case CatalogProblem::Kind::unregistered: return "unregistered_volume";
    case CatalogProblem::Kind::open_segment: return "open_segment";
    case CatalogProblem::Kind::orphan_on_disk: return "orphan_on_disk";
    case CatalogProblem::Kind::unusable_on_disk: return "unusable_on_disk";
    case CatalogProblem::Kind::missing_data: return "missing_data";
    case CatalogProblem::Kind::mismatch: return "catalog_mismatch";
    case CatalogProblem::Kind::unfinished_delete: return "unfinished_delete";
  }
  return "unknown";
}

bool CatalogProblem::serious() const noexcept {
  return kind != Kind::open_segment && kind != Kind::unfinished_delete && kind != Kind::unregistered;
}

std::string CatalogProblem::describe() const {
  std::string s = catalog_problem_name(kind);
  if (segment_id) s += ": segment " + std::to_string(segment_id) + " (stream " + std::to_string(stream_id) + ")";
  if (!detail.empty()) s += ": " + detail;
  return s;
}

std::vector<CatalogProblem> check_against_catalog(pqxx::work& tx, const std::vector<catalog::VolumeSegment>& found,
                                                  std::int64_t volume_id) {
  using Kind = CatalogProblem::Kind;
  const auto in_catalog = catalog::catalog_segments(tx, volume_id);
  // What --repair would do: it also frees what cannot be read.
  auto known = known_streams(tx);
  // Streams --repair would rebuild from the segment headers: their segments are adopted.
  const auto rebuilt = plan_stream_rebuild(found, known);
  std::map<std::int64_t, const RebuiltStream*> rebuilt_by_id;
  for (const auto& s : rebuilt) {
    known.insert(s.stream_id);
    rebuilt_by_id[s.stream_id] = &s;
  }
  const auto plan = catalog::plan_recovery(found, in_catalog, known, /*reclaim_unreadable=*/true);
  std::vector<CatalogProblem> out;
  const auto sid = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  for (const auto& v : plan.close) {
    out.push_back({Kind::open_segment, sid(v.segment_id), sid(v.stream_id),
                   std::to_string(v.frame_count) + " frames on the volume; vigild closes it at its next start"});
  }
  for (const auto& v : plan.adopt) {
    const auto r = rebuilt_by_id.find(sid(v.stream_id));
    out.push_back({Kind::orphan_on_disk, sid(v.segment_id), sid(v.stream_id),
                   std::to_string(v.frame_count) + " frames not in the catalog; --repair adopts them" +
                       (r == rebuilt_by_id.end() ? std::string()
                                                 : " and rebuilds their stream (camera " +
                                                       r->second->description.camera + ") from the segment header")});
  }
  std::set<std::int64_t> deleting(plan.finish_delete.begin(), plan.finish_delete.end());
  std::map<std::uint64_t, const catalog::VolumeSegment*> by_id;
  for (const auto& v : found) by_id[v.segment_id] = &v;
  std::set<std::int64_t> cataloged;
  for (const auto& c : in_catalog) cataloged.insert(c.id);
  for (auto id : plan.reclaim) {
    if (deleting.count(sid(id))) continue;
    const auto* v = by_id.at(id);
    if (cataloged.count(sid(id))) continue;  // leftovers of a lost segment: reported below
    out.push_back({Kind::unusable_on_disk, sid(id), sid(v->stream_id),
                   v->readable ? "no frames; --repair frees its extents"
                               : "segment header unreadable; --repair frees its extents"});
  }
  for (const auto& c : plan.lost) {
    out.push_back({Kind::missing_data, c.id, c.stream_id,
                   "state " + c.state + ", [" + std::to_string(c.start_us) + ", " + std::to_string(c.end_us) +
                       ") µs not readable on the volume; --repair marks it damaged with a gap"});
  }
  for (auto id : plan.finish_delete) {
    out.push_back({Kind::unfinished_delete, id, 0, "retention was interrupted; the next start finishes it"});
  }
  std::map<std::int64_t, const catalog::CatalogSegment*> row;
  for (const auto& c : in_catalog) row[c.id] = &c;
  for (const auto& v : plan.refresh) {
    const auto& c = *row.at(sid(v.segment_id));
    out.push_back({Kind::mismatch, c.id, c.stream_id,
                   "catalog " + std::to_string(c.frame_count) + " frames ending at " + std::to_string(c.end_us) +
                       " µs, volume " + std::to_string(v.frame_count) + " frames ending at " +
                       std::to_string(v.end_us) + " µs; --repair takes the volume's"});
  }
  return out;
}

std::map<std::uint64_t, std::uint64_t> closed_segment_ends(pqxx::work& tx, std::int64_t volume_id) {
  std::map<std::uint64_t, std::uint64_t> out;
  for (const auto& row :
       tx.exec_params("SELECT id, data_bytes FROM segments WHERE volume_id = $1 AND state IN ('closed', 'deleting')",
                      volume_id)) {
    out[row[0].as<std::uint64_t>()] = row[1].as<std::uint64_t>();
  }
  return out;
}

}  // namespace vigil::catalog
