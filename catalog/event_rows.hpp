#pragma once
// Events in the catalog (docs/catalog.md, docs/openapi.yaml /api/v1/events): insert a batch in
// the caller's transaction, find events overlapping a time range with filters (camera set,
// types, object classes, a frame zone, attribute containment, minimum confidence), newest
// first with keyset pagination, read and delete one by id. Every event comes with its clip
// [start - pad_before, end + pad_after] and whether any video segment of its camera intersects
// that clip. All SQL is parameterised; the time filter uses exactly the expression of the
// events_time_range GiST index.
// Thread: the catalog pool (any thread with its own connection). Errors: throws (pqxx;
// CatalogError for a value that breaks a rule; UnknownCamera, a CatalogError of kind not_found).
#include <cstdint>
#include <optional>
#include <pqxx/transaction_base>
#include <stdexcept>
#include <string>
#include <vector>

#include "catalog/catalog_error.hpp"

namespace vigil::catalog {

// A camera name that is not in the catalog.
struct UnknownCamera : CatalogError {
  explicit UnknownCamera(const std::string& name)
      : CatalogError(Kind::not_found, "no camera named '" + name + "'"), camera(name) {}
  std::string camera;
};

// A rectangle of the frame, normalised: 0 <= x0 <= x1 <= 1, 0 <= y0 <= y1 <= 1 (x right, y down).
struct FrameBox {
  double x0 = 0, y0 = 0, x1 = 1, y1 = 1;
};

struct NewEvent {
  std::string camera;
  std::int64_t start_us = 0, end_us = 0;  // closed [start_us, end_us]
  std::string type;
  std::optional<std::string> object_class{};
  std::optional<double> confidence{};  // 0..1
  std::optional<FrameBox> location{};  // none: the whole frame
  std::string attributes_json = "{}";  // a serialised JSON object
  std::optional<std::string> source{};
};

struct EventClip {
  std::int64_t from_us = 0, to_us = 0;  // closed; from_us is never below 0
  bool recorded = false;                // a segment (open or closed) of a video stream intersects it
};

struct EventRow {
  std::int64_t id = 0;
  std::string camera;
  std::int64_t start_us = 0, end_us = 0;
  std::string type;
  std::optional<std::string> object_class{};
  std::optional<double> confidence{};
  std::optional<FrameBox> location{};
  std::string attributes_json;
  std::optional<std::string> source{};
  std::int64_t created_at_us = 0;
  EventClip clip{};
};

// Keyset position in the newest-first order (start_us DESC, id DESC): the last event returned.
struct EventCursor {
  std::int64_t start_us = 0, id = 0;
};

struct ClipPadding {
  std::int64_t before_us = 5'000'000, after_us = 5'000'000;
};

struct EventQuery {
  std::int64_t from_us = 0, to_us = 0;         // events whose [start, end] overlaps [from, to]
  std::vector<std::string> cameras{};          // empty: any camera
  std::vector<std::string> types{};            // empty: any type
  std::vector<std::string> object_classes{};   // empty: any (also none)
  std::optional<FrameBox> zone{};              // location overlaps it (touching counts), or location is NULL
  std::optional<std::string> attributes_json;  // attributes @> this JSON object
  std::optional<double> min_confidence{};      // confidence >= this (events without one excluded)
  std::size_t limit = 100;
  std::optional<EventCursor> after{};  // continue after this event
  ClipPadding pad{};
};

struct EventPage {
  std::vector<EventRow> events;
  std::optional<EventCursor> next{};  // set when more events match: pass it as `after`
};

// Inserts EVENTS (all or nothing, in TX's transaction); returns their ids in order. Throws
// UnknownCamera for the first camera not in the catalog.
std::vector<std::int64_t> insert_events(pqxx::transaction_base& tx, const std::vector<NewEvent>& events);
EventPage find_events(pqxx::transaction_base& tx, const EventQuery& q);
// The statement find_events runs, with its 16 parameters (for plan tests).
const std::string& find_events_sql();
std::optional<EventRow> event_by_id(pqxx::transaction_base& tx, std::int64_t id, const ClipPadding& pad = {});
bool delete_event(pqxx::transaction_base& tx, std::int64_t id);  // true if it existed
// The names of NAMES that are not cameras in the catalog, in the order given.
std::vector<std::string> unknown_cameras(pqxx::transaction_base& tx, const std::vector<std::string>& names);

// find_events as a client asks it: Q's cameras must all exist (else UNKNOWN names them and PAGE is
// empty) — unless OWN_CAMERAS, when they are the set of a token limited to some cameras, and those
// that have not recorded yet simply have no events.
struct EventSearch {
  EventPage page;
  std::vector<std::string> unknown;
};
EventSearch search_events(pqxx::transaction_base& tx, EventQuery q, bool own_cameras);

// ^[a-z][a-z0-9_.-]*$, at most 64 characters: event types and object classes.
bool is_valid_event_word(const std::string& word);

}  // namespace vigil::catalog
