// Boost.Asio's and Beast's non-template code, compiled once for the whole
// proxy (BOOST_ASIO_SEPARATE_COMPILATION and BOOST_BEAST_SEPARATE_COMPILATION,
// set for the proxy layer in CMakeLists.txt) instead of inline in every file
// that includes them.
#include <utility>  // Boost 1.74's Asio needs it first under g++ 12 in C++20

#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
