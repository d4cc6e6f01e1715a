// Boost.Beast/Asio names used by the proxy's network code, in one place.
// <utility> must come first: Boost 1.74's Asio needs it under g++12 in C++20.
#pragma once

#include <utility>

#include <chrono>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace forge::proxy {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
template <typename T>
using Task = net::awaitable<T>;

// Completion token that puts the error in ec instead of throwing.
inline auto Into(beast::error_code& ec) { return net::redirect_error(net::use_awaitable, ec); }

// Seconds as given in options, as a steady-clock duration for timers and deadlines.
inline std::chrono::steady_clock::duration SteadySeconds(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace forge::proxy
