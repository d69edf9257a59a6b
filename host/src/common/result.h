// Result<T>: a value or an error message a user can act on. Used instead of exceptions across
// component boundaries. Result<T, E> carries another kind of error (the embedded API server's
// metav1.Status); error() gives the message of an Error, the error itself otherwise.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace kuscia_host {

struct Error {
  std::string message;
};

template <class T, class E = Error> class [[nodiscard]] Result {
public:
  Result(T value) : v_(std::move(value)) {} // NOLINT(google-explicit-constructor)
  Result(E error) : v_(std::move(error)) {} // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const T& operator*() const { return value(); }
  const T* operator->() const { return &value(); }
  decltype(auto) error() const {
    if constexpr (std::is_same_v<E, Error>)
      return (std::get<1>(v_).message);
    else
      return (std::get<1>(v_));
  }

private:
  std::variant<T, E> v_;
};

template <> class [[nodiscard]] Result<void, Error> {
public:
  Result() = default;
  Result(Error error) : error_(std::move(error.message)), ok_(false) {} // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string& error() const { return error_; }

private:
  std::string error_;
  bool ok_ = true;
};

inline Error makeError(std::string message) {
  return Error{std::move(message)};
}

} // namespace kuscia_host
