#include "server/api/event_json.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <cstdio>

#include "common/time_arg.hpp"
#include "catalog/camera_rows.hpp"
#include "server/net/http_query.hpp"

namespace json = boost::json;

namespace vigil::server {
namespace {

constexpr std::string_view kFields[] = {"camera",       "start",      "start_us", "end",        "end_us", "type",
                                        "object_class", "confidence", "location", "attributes", "source"};

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// Whether OK(x) holds for V and every value and key inside it (keys are passed as strings).
template <typename Pred>
bool all_values(const json::value& v, const Pred& ok) {
  if (!ok(v)) return false;
  if (v.is_array()) {
    for (const auto& x : v.get_array()) {
      if (!all_values(x, ok)) return false;
    }
  }
  if (v.is_object()) {
    for (const auto& [k, x] : v.get_object()) {
      if (!ok(json::value(json::string(k))) || !all_values(x, ok)) return false;
    }
  }
  return true;
}

// No string or key of V holds U+0000 (PostgreSQL's jsonb cannot store it).
bool nul_free(const json::value& v) {
  return all_values(v, [](const json::value& x) { return !x.is_string() || !has_nul(x.get_string()); });
}

// Every number in V is finite: Boost.JSON reads 1e999 as infinity and would write it back as
// "Infinity", which is not JSON (PostgreSQL's jsonb refuses it; nothing could read it back).
bool finite_numbers(const json::value& v) {
  return all_values(v, [](const json::value& x) { return !x.is_double() || std::isfinite(x.get_double()); });
}

class EventParser {
 public:
  EventParser(const json::object& o, std::string prefix, std::int64_t now_us)
      : o_(o), prefix_(std::move(prefix)), now_us_(now_us) {}

  catalog::NewEvent parse() {
    for (const auto& [k, v] : o_) {
      bool known = false;
      for (auto f : kFields) known = known || k == f;
      if (!known) {
        throw BadRequest(prefix_ + "unknown field '" + std::string(k.substr(0, 64)) +
                         "' (accepted: camera, start or "
                         "start_us, end or end_us, type, object_class, confidence, location, attributes, source)");
      }
    }
    catalog::NewEvent e;
    e.camera = required_string("camera");
    if (!catalog::is_valid_camera_name(e.camera)) {
      fail("camera", "is not a camera name (1-64 letters, digits, '.', '_' or '-', starting with a letter or digit)");
    }
    const auto start = time("start", "start_us");
    if (!start) fail("start", "is required (give 'start' as a time string or 'start_us' as integer microseconds)");
    e.start_us = *start;
    e.end_us = time("end", "end_us").value_or(e.start_us);
    if (e.end_us < e.start_us) fail("end", "is before the start");
    if (e.end_us - e.start_us > kMaxEventLengthUs) fail("end", "is more than 400 days after the start");
    e.type = required_string("type");
    if (!catalog::is_valid_event_word(e.type)) fail("type", "must match ^[a-z][a-z0-9_.-]*$ (at most 64 characters)");
    if (const auto* v = present("object_class")) {
      if (!v->is_string() || !catalog::is_valid_event_word(std::string(v->get_string()))) {
        fail("object_class", "must be null or match ^[a-z][a-z0-9_.-]*$ (at most 64 characters)");
      }
      e.object_class = std::string(v->get_string());
    }
    if (const auto* v = present("confidence")) e.confidence = unit_number(*v, "confidence");
    if (const auto* v = present("location")) {
      if (!v->is_object() || v->get_object().size() != 4) fail("location", "must be null or {x0, y0, x1, y1}");
      const auto& l = v->get_object();
      const auto coord = [&](const char* key) {
        const auto* c = l.if_contains(key);
        if (!c) fail("location", std::string("lacks ") + key + " (give x0, y0, x1, y1)");
        return unit_number(*c, std::string("location.") + key);
      };
      e.location = catalog::FrameBox{coord("x0"), coord("y0"), coord("x1"), coord("y1")};
      if (e.location->x0 > e.location->x1 || e.location->y0 > e.location->y1) {
        fail("location", "needs x0 <= x1 and y0 <= y1");
      }
    }
    if (const auto* v = present("attributes")) {
      if (!v->is_object()) fail("attributes", "must be a JSON object");
      if (!nul_free(*v)) fail("attributes", "must not contain the character U+0000");
      if (!finite_numbers(*v)) fail("attributes", "must not hold a number beyond the range of a double");
      e.attributes_json = json::serialize(*v);
      if (e.attributes_json.size() > kMaxAttributesBytes) fail("attributes", "is larger than 16 KiB");
    }
    if (const auto* v = present("source")) {
      if (!v->is_string()) fail("source", "must be null or a string");
      const std::string_view s = v->get_string();
      if (s.size() > kMaxSourceBytes || has_nul(s)) fail("source", "must be at most 256 bytes, without U+0000");
      e.source = std::string(s);
    }
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw BadRequest(prefix_ + "field '" + field + "' " + why);
  }

  // The field's value, or null when it is absent or JSON null.
  const json::value* present(const char* key) const {
    const auto* v = o_.if_contains(key);
    return v && !v->is_null() ? v : nullptr;
  }

  std::string required_string(const char* key) const {
    const auto* v = present(key);
    if (!v || !v->is_string()) fail(key, "is required (a string)");
    return std::string(v->get_string());
  }

  double unit_number(const json::value& v, const std::string& field) const {
    if (!v.is_number()) fail(field, "must be a number from 0 to 1");
    const double x = v.to_number<double>();
    if (!std::isfinite(x) || x < 0 || x > 1) fail(field, "must be a number from 0 to 1");
    return x;
  }

  // TEXT_KEY as a time string, or US_KEY as integer microseconds; not both.
  std::optional<std::int64_t> time(const char* text_key, const char* us_key) const {
    const auto* text = present(text_key);
    const auto* us = present(us_key);
    if (text && us) fail(text_key, std::string("and '") + us_key + "' are both given: give one");
    std::int64_t t = 0;
    if (us) {
      if (!us->is_int64()) fail(us_key, "must be an integer (Unix microseconds)");
      t = us->get_int64();
      if (t < 0 || t > kMaxEventTimeUs) fail(us_key, "is out of range (0 to 1e17 microseconds)");
      return t;
    }
    if (!text) return std::nullopt;
    if (!text->is_string()) fail(text_key, "must be a time string (or give '" + std::string(us_key) + "')");
    try {
      t = parse_time_arg(std::string(text->get_string()), now_us_);
    } catch (const std::invalid_argument& e) {
      fail(text_key, std::string("is not a valid time: ") + e.what());
    }
    if (t < 0 || t > kMaxEventTimeUs) fail(text_key, "is out of range (before 1970 or too far ahead)");
    return t;
  }

  const json::object& o_;
  std::string prefix_;
  std::int64_t now_us_;
};

}  // namespace

std::vector<catalog::NewEvent> parse_events_body(std::string_view body, std::int64_t now_us, bool& single) {
  boost::system::error_code ec;
  const json::value doc = json::parse(body, ec);
  if (ec) throw BadRequest("the body is not valid JSON: " + ec.message());
  std::vector<catalog::NewEvent> out;
  if (doc.is_object()) {
    single = true;
    out.push_back(EventParser(doc.get_object(), "", now_us).parse());
    return out;
  }
  if (!doc.is_array()) throw BadRequest("the body must be an event object or an array of them");
  single = false;
  const auto& arr = doc.get_array();
  if (arr.empty()) throw BadRequest("the array of events is empty");
  if (arr.size() > kMaxEventBatch) throw BadRequest("too many events in one request (at most 1000)");
  out.reserve(arr.size());
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string prefix = "event " + std::to_string(i) + ": ";
    if (!arr[i].is_object()) throw BadRequest(prefix + "must be a JSON object");
    out.push_back(EventParser(arr[i].get_object(), prefix, now_us).parse());
  }
  return out;
}

std::string at_seconds(std::int64_t t_us) {
  if (t_us < 0) t_us = 0;
  char buf[48];
  std::snprintf(buf, sizeof buf, "@%lld", static_cast<long long>(t_us / 1'000'000));
  std::string out = buf;
  if (const auto frac = t_us % 1'000'000) {
    std::snprintf(buf, sizeof buf, ".%06lld", static_cast<long long>(frac));
    std::string f = buf;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out;
}

json::object event_to_json(const catalog::EventRow& e) {
  json::object o{{"id", e.id}, {"camera", e.camera}, {"start_us", e.start_us}, {"end_us", e.end_us}, {"type", e.type}};
  o["object_class"] = e.object_class ? json::value(*e.object_class) : json::value(nullptr);
  o["confidence"] = e.confidence ? json::value(*e.confidence) : json::value(nullptr);
  if (e.location) {
    o["location"] =
        json::object{{"x0", e.location->x0}, {"y0", e.location->y0}, {"x1", e.location->x1}, {"y1", e.location->y1}};
  } else {
    o["location"] = nullptr;
  }
  o["attributes"] = json::parse(e.attributes_json);
  o["source"] = e.source ? json::value(*e.source) : json::value(nullptr);
  o["created_at_us"] = e.created_at_us;
  // Camera names are [A-Za-z0-9._-] and the @ form is [@0-9.]: both safe in a URL as they are.
  const std::string range = "?from=" + at_seconds(e.clip.from_us) + "&to=" + at_seconds(e.clip.to_us);
  const std::string base = "/api/v1/cameras/" + e.camera;
  o["clip"] = json::object{{"from_us", e.clip.from_us},
                           {"to_us", e.clip.to_us},
                           {"recorded", e.clip.recorded},
                           {"export_url", base + "/export.mp4" + range},
                           {"hls_url", base + "/hls.m3u8" + range}};
  return o;
}

}  // namespace vigil::server
