#include "catalog/event_rows.hpp"

#include <cmath>
#include <map>
#include <algorithm>
#include <pqxx/pqxx>

#include "catalog/camera_rows.hpp"
#include "catalog/catalog_error.hpp"

namespace vigil::catalog {
namespace {

// A text[] parameter (pqxx 6.4 passes arrays as text). Every element is checked by VALID first,
// which admits only [A-Za-z0-9._-]: nothing in the literal can quote or escape.
template <class Valid>
std::optional<std::string> word_array(const std::vector<std::string>& words, Valid valid, const char* what) {
  if (words.empty()) return std::nullopt;
  std::string out = "{";
  for (const auto& w : words) {
    if (!valid(w)) throw CatalogError::invalid(std::string(what) + " '" + w.substr(0, 80) + "' is not valid");
    if (out.size() > 1) out += ',';
    out += w;
  }
  return out + "}";
}

bool in_unit(double v) { return std::isfinite(v) && v >= 0 && v <= 1; }

void check_box(const FrameBox& b, const char* what) {
  if (!in_unit(b.x0) || !in_unit(b.y0) || !in_unit(b.x1) || !in_unit(b.y1) || b.x0 > b.x1 || b.y0 > b.y1) {
    throw CatalogError::invalid(std::string(what) + " must be 0 <= x0 <= x1 <= 1 and 0 <= y0 <= y1 <= 1");
  }
}

// The event columns, its clip and the recorded flag, around an inner query (INNER) that
// selects events as `ev` joined with `c` (cameras), with $1/$2 the clip paddings. The flag is
// evaluated only for the rows the inner query keeps (after its LIMIT). Segments of a stream do
// not overlap, so a segment meets the closed clip [f, t] iff it starts in [f, t], or it is the
// last one starting before f and ends after f: two descents of segments_stream_start per stream.
std::string with_clip(const std::string& inner_where, const std::string& inner_tail) {
  return "SELECT e.id, e.camera, e.start_us, e.end_us, e.type, e.object_class, e.conf, e.lx0, e.ly0, e.lx1, e.ly1, "
         "e.attributes, e.source, e.created_at_us, e.clip_from, e.clip_to, "
         "EXISTS (SELECT 1 FROM streams st WHERE st.camera_id = e.camera_id AND st.media_kind = 'video' AND ("
         "  EXISTS (SELECT 1 FROM segments g WHERE g.stream_id = st.id AND g.start_us >= e.clip_from "
         "          AND g.start_us <= e.clip_to AND g.state IN ('open', 'closed', 'archived')) "
         "  OR coalesce((SELECT g.end_us > e.clip_from AND g.state IN ('open', 'closed', 'archived') FROM segments g "
         "               WHERE g.stream_id = st.id AND g.start_us < e.clip_from "
         "               ORDER BY g.start_us DESC LIMIT 1), false))) "
         "FROM (SELECT ev.id, ev.camera_id, c.name AS camera, ev.start_us, ev.end_us, ev.type, ev.object_class, "
         "      ev.confidence::numeric::float8 AS conf, "
         "      (ev.location[1])[0] AS lx0, (ev.location[1])[1] AS ly0, "
         "      (ev.location[0])[0] AS lx1, (ev.location[0])[1] AS ly1, "
         "      ev.attributes::text AS attributes, ev.source, ev.created_at_us, "
         "      greatest(ev.start_us - $1::bigint, 0) AS clip_from, ev.end_us + $2::bigint AS clip_to "
         "      FROM events ev JOIN cameras c ON c.id = ev.camera_id WHERE " +
         inner_where + " " + inner_tail + ") e ORDER BY e.start_us DESC, e.id DESC";
}

// pqxx 6.4's field::as<std::optional<T>> does not compile; NULL is nullopt here.
template <class T>
std::optional<T> opt(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<T>();
}

EventRow to_row(const pqxx::row& r) {
  EventRow e;
  e.id = r[0].as<std::int64_t>();
  e.camera = r[1].as<std::string>();
  e.start_us = r[2].as<std::int64_t>();
  e.end_us = r[3].as<std::int64_t>();
  e.type = r[4].as<std::string>();
  e.object_class = opt<std::string>(r[5]);
  e.confidence = opt<double>(r[6]);
  if (!r[7].is_null()) {
    e.location = FrameBox{r[7].as<double>(), r[8].as<double>(), r[9].as<double>(), r[10].as<double>()};
  }
  e.attributes_json = r[11].as<std::string>();
  e.source = opt<std::string>(r[12]);
  e.created_at_us = r[13].as<std::int64_t>();
  e.clip = {r[14].as<std::int64_t>(), r[15].as<std::int64_t>(), r[16].as<bool>()};
  return e;
}

void check_padding(const ClipPadding& pad) {
  constexpr std::int64_t kMaxPadUs = 300'000'000;
  if (pad.before_us < 0 || pad.after_us < 0 || pad.before_us > kMaxPadUs || pad.after_us > kMaxPadUs) {
    throw CatalogError::invalid("clip padding must be 0 to 300 s");
  }
}

}  // namespace

bool is_valid_event_word(const std::string& w) {
  if (w.empty() || w.size() > 64 || !(w[0] >= 'a' && w[0] <= 'z')) return false;
  for (char ch : w) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string> unknown_cameras(pqxx::transaction_base& tx, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  const auto arr = word_array(names, is_valid_camera_name, "camera name");
  if (!arr) return out;
  for (const auto& row : tx.exec_params("SELECT u.n FROM unnest($1::text[]) WITH ORDINALITY AS u(n, i) "
                                        "WHERE NOT EXISTS (SELECT 1 FROM cameras c WHERE c.name = u.n) ORDER BY u.i",
                                        arr)) {
    out.push_back(row[0].as<std::string>());
  }
  return out;
}

std::vector<std::int64_t> insert_events(pqxx::transaction_base& tx, const std::vector<NewEvent>& events) {
  std::vector<std::string> names;
  for (const auto& e : events) {
    if (!is_valid_camera_name(e.camera)) {
      throw CatalogError::invalid("camera name '" + e.camera.substr(0, 80) + "' is not valid");
    }
    if (e.end_us < e.start_us) throw CatalogError::invalid("an event ends before it starts");
    if (!is_valid_event_word(e.type)) {
      throw CatalogError::invalid("event type '" + e.type.substr(0, 80) + "' is not valid");
    }
    if (e.object_class && !is_valid_event_word(*e.object_class)) {
      throw CatalogError::invalid("object class is not valid");
    }
    if (e.confidence && !in_unit(*e.confidence)) throw CatalogError::invalid("confidence must be 0 to 1");
    if (e.location) check_box(*e.location, "location");
    names.push_back(e.camera);
  }
  std::map<std::string, std::int64_t> ids;
  if (!names.empty()) {
    for (const auto& row : tx.exec_params("SELECT name, id FROM cameras WHERE name = ANY ($1::text[])",
                                          word_array(names, is_valid_camera_name, "camera name"))) {
      ids[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    }
  }
  std::vector<std::int64_t> out;
  out.reserve(events.size());
  for (const auto& e : events) {
    const auto cam = ids.find(e.camera);
    if (cam == ids.end()) throw UnknownCamera(e.camera);
    std::optional<double> x0, y0, x1, y1;
    if (e.location) {
      x0 = e.location->x0;
      y0 = e.location->y0;
      x1 = e.location->x1;
      y1 = e.location->y1;
    }
    const auto row = tx.exec_params1(
        "INSERT INTO events "
        "  (camera_id, start_us, end_us, type, object_class, confidence, location, attributes, source) "
        "VALUES ($1, $2, $3, $4, $5, $6::float8::real, "
        "        CASE WHEN $7::float8 IS NULL THEN NULL "
        "             ELSE box(point($7::float8, $8::float8), point($9::float8, $10::float8)) END, "
        "        $11::jsonb, $12) RETURNING id",
        cam->second, e.start_us, e.end_us, e.type, e.object_class, e.confidence, x0, y0, x1, y1, e.attributes_json,
        e.source);
    out.push_back(row[0].as<std::int64_t>());
  }
  return out;
}

const std::string& find_events_sql() {
  // Each optional filter is "$n IS NULL OR ...": the statement is planned with its parameters
  // (unnamed, custom plan), so an absent filter folds away and the indexes stay usable.
  static const std::string sql = with_clip(
      "int8range(ev.start_us, ev.end_us, '[]') && int8range($3, $4, '[]') "
      "AND ($5::text[] IS NULL OR c.name = ANY ($5::text[])) "
      "AND ($6::text[] IS NULL OR ev.type = ANY ($6::text[])) "
      "AND ($7::text[] IS NULL OR ev.object_class = ANY ($7::text[])) "
      "AND ($8::float8 IS NULL OR ev.location IS NULL "
      "     OR ev.location && box(point($8::float8, $9::float8), point($10::float8, $11::float8))) "
      "AND ($12::jsonb IS NULL OR ev.attributes @> $12::jsonb) "
      "AND ($13::float8 IS NULL OR ev.confidence >= $13::float8::real) "
      "AND ($14::bigint IS NULL OR (ev.start_us, ev.id) < ($14::bigint, $15::bigint))",
      "ORDER BY ev.start_us DESC, ev.id DESC LIMIT $16");
  return sql;
}

EventPage find_events(pqxx::transaction_base& tx, const EventQuery& q) {
  if (q.to_us < q.from_us) throw CatalogError::invalid("the range is inverted: 'to' is before 'from'");
  if (q.limit == 0) throw CatalogError::invalid("the limit must be at least 1");
  check_padding(q.pad);
  if (q.zone) check_box(*q.zone, "zone");
  if (q.min_confidence && !in_unit(*q.min_confidence)) throw CatalogError::invalid("min_confidence must be 0 to 1");
  const auto cameras = word_array(q.cameras, is_valid_camera_name, "camera name");
  const auto types = word_array(q.types, is_valid_event_word, "event type");
  const auto classes = word_array(q.object_classes, is_valid_event_word, "object class");
  std::optional<double> zx0, zy0, zx1, zy1;
  if (q.zone) {
    zx0 = q.zone->x0;
    zy0 = q.zone->y0;
    zx1 = q.zone->x1;
    zy1 = q.zone->y1;
  }
  std::optional<std::int64_t> after_start, after_id;
  if (q.after) {
    after_start = q.after->start_us;
    after_id = q.after->id;
  }
  const auto rows = tx.exec_params(find_events_sql(), q.pad.before_us, q.pad.after_us, q.from_us, q.to_us, cameras,
                                   types, classes, zx0, zy0, zx1, zy1, q.attributes_json, q.min_confidence, after_start,
                                   after_id, static_cast<std::int64_t>(q.limit) + 1);
  EventPage page;
  for (const auto& row : rows) {
    if (page.events.size() == q.limit) {
      page.next = EventCursor{page.events.back().start_us, page.events.back().id};
      break;
    }
    page.events.push_back(to_row(row));
  }
  return page;
}

std::optional<EventRow> event_by_id(pqxx::transaction_base& tx, std::int64_t id, const ClipPadding& pad) {
  check_padding(pad);
  static const std::string sql = with_clip("ev.id = $3", "");
  const auto rows = tx.exec_params(sql, pad.before_us, pad.after_us, id);
  if (rows.empty()) return std::nullopt;
  return to_row(rows[0]);
}

bool delete_event(pqxx::transaction_base& tx, std::int64_t id) {
  return !tx.exec_params("DELETE FROM events WHERE id = $1 RETURNING id", id).empty();
}

EventSearch search_events(pqxx::transaction_base& tx, EventQuery q, bool own_cameras) {
  EventSearch out;
  out.unknown = unknown_cameras(tx, q.cameras);
  if (own_cameras) {
    std::erase_if(q.cameras, [&out](const auto& n) { return std::ranges::find(out.unknown, n) != out.unknown.end(); });
    out.unknown.clear();
    if (q.cameras.empty()) return out;  // none of its cameras exists yet: no events
  }
  if (out.unknown.empty()) out.page = find_events(tx, q);
  return out;
}

}  // namespace vigil::catalog
