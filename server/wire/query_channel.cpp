#include "server/wire/query_channel.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <pqxx/pqxx>

#include "catalog/camera_rows.hpp"
#include "catalog/event_rows.hpp"
#include "catalog/timeline_rows.hpp"
#include "common/log.hpp"
#include "proto/frame_codec.hpp"

namespace asio = boost::asio;

namespace vigil::server {
namespace {

constexpr std::int64_t kDayUs = 86'400'000'000;
constexpr std::int64_t kMaxRangeUs = 400 * kDayUs;  // as the HTTP API: a bit over a year per query
constexpr std::int64_t kDefaultSpanUs = kDayUs;     // from_us 0: the day before to_us

// What a request asks that the protocol refuses; answered as an Error with the request's id.
struct Refused {
  errc code;
  std::string why;
};

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Range {
  std::int64_t from_us, to_us;
};

Range range_of(const proto::QueryRequest& r) {
  const std::int64_t to = r.to_us() == 0 ? now_us() : r.to_us();
  const std::int64_t from = r.from_us() == 0 ? to - kDefaultSpanUs : r.from_us();
  if (to <= from) throw Refused{errc::invalid_argument, "to_us must be after from_us"};
  if (to - from > kMaxRangeUs)
    throw Refused{errc::invalid_argument, "the range is longer than 400 days: ask in pieces"};
  return {from, to};
}

std::uint32_t limit_of(const proto::QueryRequest& r, std::uint32_t by_default, std::uint32_t most) {
  return r.limit() == 0 ? by_default : std::min(r.limit(), most);
}

std::vector<std::string> names_of(const proto::QueryRequest& r) {
  std::vector<std::string> out(r.stream_names().begin(), r.stream_names().end());
  for (const auto& n : out) {
    if (!catalog::is_valid_camera_name(n)) throw Refused{errc::invalid_argument, "a stream name is not valid"};
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

proto::Envelope error_for(std::uint64_t request_id, errc code, const std::string& why) {
  auto e = proto::make_error(code, why);
  e.mutable_error()->set_request_id(request_id);
  return e;
}

proto::Envelope response_for(const proto::QueryRequest& r) {
  proto::Envelope e;
  e.mutable_query_response()->set_request_id(r.request_id());
  return e;
}

void set_zone(proto::FrameZone& z, const catalog::FrameBox& b) {
  z.set_x0(b.x0);
  z.set_y0(b.y0);
  z.set_x1(b.x1);
  z.set_y1(b.y1);
}

}  // namespace

asio::awaitable<proto::Envelope> QueryChannel::answer(const proto::QueryRequest& request, const Grant& grant) {
  try {
    switch (request.kind()) {
      case proto::QUERY_KIND_STREAMS: co_return co_await streams(request, grant);
      case proto::QUERY_KIND_TIMELINE: co_return co_await timeline(request, grant);
      case proto::QUERY_KIND_EVENTS: co_return co_await events(request, grant);
      default: co_return error_for(request.request_id(), errc::invalid_argument, "the query's kind is not set");
    }
  } catch (const Refused& r) {
    co_return error_for(request.request_id(), r.code, r.why);
  } catch (const catalog::CatalogError& e) {
    co_return error_for(request.request_id(),
                        e.kind() == catalog::CatalogError::Kind::not_found ? errc::not_found : errc::invalid_argument,
                        e.what());
  } catch (const std::exception& e) {
    // The catalog did not answer (down, cut, a statement timeout): the client may ask again.
    log::warn("wire query failed", {{"request", request.request_id()}, {"error", e.what()}});
    co_return error_for(request.request_id(), errc::unavailable, "catalog unavailable; try again");
  }
}

asio::awaitable<proto::Envelope> QueryChannel::streams(const proto::QueryRequest& request, const Grant& grant) {
  const auto names = names_of(request);
  const auto limit = limit_of(request, kQueryDefaultStreams, kQueryMaxStreams);
  auto rows = co_await catalog_.run([](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::list_cameras(tx);
  });
  auto out = response_for(request);
  auto* r = out.mutable_query_response();
  for (const auto& row : rows) {
    if (!grant.sees(row.name)) continue;
    if (!names.empty() && !std::binary_search(names.begin(), names.end(), row.name)) continue;
    if (static_cast<std::uint32_t>(r->stream_names_size()) == limit) {
      r->set_truncated(true);
      break;
    }
    r->add_stream_names(row.name);
  }
  co_return out;
}

asio::awaitable<proto::Envelope> QueryChannel::timeline(const proto::QueryRequest& request, const Grant& grant) {
  const auto range = range_of(request);
  catalog::TimelineQuery query;
  query.cameras = names_of(request);
  query.from_us = range.from_us;
  query.to_us = range.to_us;
  query.max_items = limit_of(request, kQueryDefaultTimelineItems, kQueryMaxTimelineItems);
  if (disks_) query.fresher = disks_->recent().timeline_segments(query.cameras, query.from_us, query.to_us);
  // The main video's timeline, then the sub streams' (one snapshot: both see the same rows).
  auto [result, subs] = co_await catalog_.run([&query](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    auto main = catalog::timeline(tx, query);
    auto sub_query = query;
    sub_query.role = TrackRole::sub;
    auto sub = catalog::timeline(tx, sub_query);
    return std::pair{std::move(main), std::move(sub)};
  });
  // A camera named and not found is an error, not an empty timeline.
  for (const auto& name : query.cameras) {
    const bool found = std::any_of(result.begin(), result.end(), [&](const auto& t) { return t.camera == name; });
    if (!found) throw Refused{errc::not_found, "no camera named '" + name + "'"};
  }
  auto out = response_for(request);
  auto* r = out.mutable_query_response();
  const auto fill = [](proto::StreamTimeline& s, const catalog::CameraTimeline& t) {
    s.set_stream_name(t.camera);
    s.set_recording(t.recording);
    s.set_truncated(t.truncated);
    for (const auto& run : t.runs) {
      auto* tr = s.add_runs();
      tr->set_from_us(run.start_us);
      tr->set_to_us(run.end_us);
    }
    s.set_open_run(!t.runs.empty() && t.runs.back().open);
    for (const auto& gap : t.gaps) {
      auto* g = s.add_gaps();
      g->set_from_us(gap.start_us);
      g->set_to_us(gap.end_us);
      g->set_reason(gap.detail.empty() ? gap.reason : gap.reason + ": " + gap.detail);
    }
  };
  for (const auto& t : result) {
    if (!grant.sees(t.camera)) continue;
    fill(*r->add_timelines(), t);
    if (t.truncated) r->set_truncated(true);
    // Its sub stream's timeline follows it, named by its track label (CAMERA/sub), when it has one.
    const auto sub = std::find_if(subs.begin(), subs.end(), [&](const auto& x) { return x.camera == t.camera; });
    if (sub != subs.end() && sub->has_track) {
      auto* s = r->add_timelines();
      fill(*s, *sub);
      s->set_stream_name(Track{.camera = t.camera, .role = TrackRole::sub}.label());
      if (sub->truncated) r->set_truncated(true);
    }
  }
  co_return out;
}

asio::awaitable<proto::Envelope> QueryChannel::events(const proto::QueryRequest& request, const Grant& grant) {
  const auto range = range_of(request);
  catalog::EventQuery query;
  query.from_us = range.from_us;
  query.to_us = range.to_us;
  query.cameras = names_of(request);
  // A token for some cameras asks for its own when it names none (the gate refuses that already;
  // this keeps the rule where the rows are read too).
  const bool own_cameras = query.cameras.empty() && grant.scoped();
  if (own_cameras) query.cameras = *grant.cameras;
  const auto word = [](const std::string& w, const char* what) {
    if (!catalog::is_valid_event_word(w)) throw Refused{errc::invalid_argument, std::string(what) + " is not valid"};
    return w;
  };
  if (!request.event_type().empty()) query.types = {word(request.event_type(), "event_type")};
  if (!request.object_class().empty()) query.object_classes = {word(request.object_class(), "object_class")};
  if (request.has_zone()) {
    const auto& z = request.zone();
    const auto unit = [](double v) { return std::isfinite(v) && v >= 0 && v <= 1; };
    if (!unit(z.x0()) || !unit(z.y0()) || !unit(z.x1()) || !unit(z.y1()) || z.x0() > z.x1() || z.y0() > z.y1()) {
      throw Refused{errc::invalid_argument, "zone must be x0 <= x1 and y0 <= y1, each from 0 to 1"};
    }
    query.zone = catalog::FrameBox{z.x0(), z.y0(), z.x1(), z.y1()};
  }
  if (request.min_confidence() != 0) {
    if (!(request.min_confidence() > 0 && request.min_confidence() <= 1)) {
      throw Refused{errc::invalid_argument, "min_confidence must be from 0 to 1"};
    }
    query.min_confidence = request.min_confidence();
  }
  query.limit = limit_of(request, kQueryDefaultEvents, kQueryMaxEvents);
  if (request.has_after()) query.after = catalog::EventCursor{request.after().start_us(), request.after().id()};
  auto found = co_await catalog_.run([&query, own_cameras](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    return catalog::search_events(tx, query, own_cameras);
  });
  const auto& unknown = found.unknown;
  const auto& page = found.page;
  if (!unknown.empty()) throw Refused{errc::not_found, "no camera named '" + unknown.front() + "'"};
  auto out = response_for(request);
  auto* r = out.mutable_query_response();
  for (const auto& e : page.events) {
    auto* m = r->add_events();
    m->set_id(e.id);
    m->set_stream_name(e.camera);
    m->set_start_us(e.start_us);
    m->set_end_us(e.end_us);
    m->set_type(e.type);
    if (e.object_class) m->set_object_class(*e.object_class);
    if (e.confidence) m->set_confidence(*e.confidence);
    if (e.location) set_zone(*m->mutable_location(), *e.location);
    m->set_attributes_json(e.attributes_json);
    if (e.source) m->set_source(*e.source);
    m->mutable_clip()->set_from_us(e.clip.from_us);
    m->mutable_clip()->set_to_us(e.clip.to_us);
    m->set_clip_recorded(e.clip.recorded);
  }
  if (page.next) {
    r->set_truncated(true);
    r->mutable_next()->set_start_us(page.next->start_us);
    r->mutable_next()->set_id(page.next->id);
  }
  co_return out;
}

}  // namespace vigil::server
