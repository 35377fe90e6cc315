#include "server/core/live_feed.hpp"

#include <algorithm>

namespace vigil::server {

std::shared_ptr<const LiveFrame> LiveTap::pop() {
  std::lock_guard lock(mu_);
  if (queue_.empty()) return nullptr;
  auto f = std::move(queue_.front());
  queue_.pop_front();
  bytes_ -= f->payload.size();
  return f;
}

std::shared_ptr<const LiveFrame> LiveTap::peek() const {
  std::lock_guard lock(mu_);
  return queue_.empty() ? nullptr : queue_.front();
}

bool LiveTap::ended() const {
  std::lock_guard lock(mu_);
  return ended_ && queue_.empty();
}

std::uint64_t LiveTap::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void LiveTap::push(const std::shared_ptr<const LiveFrame>& f) {
  {
    std::lock_guard lock(mu_);
    const bool key = f->header.keyframe();
    if (!started_ && !key) return;  // a decoder starts at a keyframe
    started_ = true;
    if (skipping_ && !key) {
      ++dropped_;
      return;
    }
    skipping_ = false;
    if (bytes_ + f->payload.size() > max_bytes_ && !queue_.empty()) {
      // The viewer fell behind: drop what it has not taken and resume at the next keyframe,
      // rather than hold the recording or other viewers back.
      dropped_ += queue_.size();
      queue_.clear();
      bytes_ = 0;
      if (!key) {
        skipping_ = true;
        ++dropped_;
        return;
      }
    }
    bytes_ += f->payload.size();
    queue_.push_back(f);
  }
  if (notify_) notify_();
}

void LiveTap::end() {
  {
    std::lock_guard lock(mu_);
    ended_ = true;
  }
  if (notify_) notify_();
}

std::shared_ptr<LiveTap> LiveFeed::subscribe(std::size_t max_bytes, std::function<void()> notify, bool at_keyframe) {
  std::lock_guard lock(mu_);
  if (ended_) return nullptr;
  auto tap = std::make_shared<LiveTap>(max_bytes, std::move(notify), at_keyframe);
  std::erase_if(taps_, [](const auto& w) { return w.expired(); });
  taps_.push_back(tap);
  watchers_ = taps_.size();
  return tap;
}

void LiveFeed::publish(const storage::RecordHeader& h, std::span<const std::byte> payload) {
  if (watchers_.load(std::memory_order_relaxed) == 0) return;  // nobody watches: no copy
  std::vector<std::shared_ptr<LiveTap>> taps;
  {
    std::lock_guard lock(mu_);
    for (const auto& w : taps_) {
      if (auto t = w.lock()) taps.push_back(std::move(t));
    }
    if (taps.size() != taps_.size()) {
      std::erase_if(taps_, [](const auto& w) { return w.expired(); });
      watchers_ = taps_.size();
    }
  }
  if (taps.empty()) return;
  auto frame = std::make_shared<LiveFrame>(LiveFrame{h, std::vector<std::byte>(payload.begin(), payload.end())});
  for (const auto& t : taps) t->push(frame);
}

void LiveFeed::end() {
  std::vector<std::shared_ptr<LiveTap>> taps;
  {
    std::lock_guard lock(mu_);
    ended_ = true;
    for (const auto& w : taps_) {
      if (auto t = w.lock()) taps.push_back(std::move(t));
    }
    taps_.clear();
    watchers_ = 0;
  }
  for (const auto& t : taps) t->end();
}

void LiveFeeds::put(const std::shared_ptr<LiveFeed>& feed) {
  std::lock_guard lock(mu_);
  feeds_[feed->track().label()] = feed;
}

void LiveFeeds::erase(const std::shared_ptr<LiveFeed>& feed) {
  std::lock_guard lock(mu_);
  if (auto it = feeds_.find(feed->track().label()); it != feeds_.end() && it->second.lock() == feed) feeds_.erase(it);
}

std::shared_ptr<LiveFeed> LiveFeeds::find(const Track& track) const {
  std::lock_guard lock(mu_);
  auto it = feeds_.find(track.label());
  return it == feeds_.end() ? nullptr : it->second.lock();
}

}  // namespace vigil::server
