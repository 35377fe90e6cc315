#pragma once
// A Beast body that sends a byte range of a shared, immutable buffer (an export built in
// memory and kept in the ExportCache): the bytes are handed to the socket where they lie, and
// the buffer stays alive until the response is written, whoever else drops it.
// Thread: the session's. Errors: none of its own.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace vigil::server {

struct SharedBytesBody {
  struct value_type {
    std::shared_ptr<const std::vector<std::byte>> data;
    std::size_t offset = 0, length = 0;  // the range sent; length 0 for HEAD
  };

  static std::uint64_t size(const value_type& v) noexcept { return v.length; }

  class writer {
   public:
    using const_buffers_type = boost::asio::const_buffer;
    template <bool isRequest, class Fields>
    writer(const boost::beast::http::header<isRequest, Fields>&, const value_type& v) : v_(v) {}
    void init(boost::beast::error_code& ec) { ec = {}; }
    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& ec) {
      ec = {};
      if (sent_ || v_.length == 0 || !v_.data) return boost::none;
      sent_ = true;
      return std::make_pair(const_buffers_type(v_.data->data() + v_.offset, v_.length), false);
    }

   private:
    const value_type& v_;
    bool sent_ = false;
  };
};

}  // namespace vigil::server
