// Boost.Asio and Beast, as the proxy's network code names them: the
// sockets, timers and coroutines of the server and of a call's I/O, and
// Beast's HTTP parser. This header and the *_asio.h headers are the Asio
// implementation: only .cpp files (and other *_asio.h) include them, never a
// header without the suffix (tests/e2e/conventions.sh checks): the stages
// that only compute (attribute.h, decode.h, admission.h, outcome.h,
// call_record.h, upstream_faults.h, the formats, the pass-through, the
// recorder) and what tools/ and the tests include reach no Boost. A .cpp that
// uses Asio includes this header itself, even when an *_asio.h of its brings
// it: the build groups the proxy's files by that line (CMakeLists.txt), so an
// edit elsewhere recompiles no Asio. <utility> must come first: Boost 1.74's
// Asio needs it under g++12 in C++20.
#pragma once

#include <utility>

#include <chrono>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

// g++ 12 pairs Asio's awaitable frame allocation (awaitable_frame_base's
// operator new, thread_info_base's recycling allocator) with its operator
// delete wrongly and warns -Wmismatched-new-delete at the closing brace of
// every coroutine (seen with Asio itself: erigontech/silkworm#2046). The
// warning is placed in the including file, past any push/pop here, so it is
// off for the rest of each file that includes this header: only the proxy's
// Asio files, which the build keeps in units of their own (CMakeLists.txt).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace forge::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
template <typename T>
using Task = asio::awaitable<T>;
// A client's request, as the server reads it.
using Request = http::request<http::string_body>;

// Completion token that puts the error in ec instead of throwing.
inline auto Into(beast::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// Seconds as given in options, as a steady-clock duration for timers and deadlines.
inline std::chrono::steady_clock::duration SteadySeconds(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace forge::proxy
