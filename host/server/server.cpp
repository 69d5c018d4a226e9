#include "host/server/server.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace ctx::server {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using Protocol = asio::local::stream_protocol;
using Clock = std::chrono::steady_clock;

void MethodTable::add(std::string name, Handler handler, FastHandler fast) {
  if (name.empty()) throw InvalidArgument("a JSON-RPC method needs a name");
  if (!handler) throw InvalidArgument("JSON-RPC method " + name + " needs a handler");
  if (methods_.contains(name)) {
    throw InvalidArgument("JSON-RPC method " + name + " is already registered");
  }
  methods_.emplace(std::move(name), Method{std::move(handler), std::move(fast)});
}

const Method* MethodTable::find(std::string_view name) const noexcept {
  const auto it = methods_.find(name);
  return it == methods_.end() ? nullptr : &it->second;
}

namespace {

class Connection;

core::Json error_reply(const core::Json& id, int code, const std::string& message) {
  return core::Json{
      {"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

std::string errno_text() { return std::strerror(errno); }

// The private-state-dir rule: a real directory of this user, no group/other access.
void require_private_dir(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    throw FailedPrecondition("state directory " + dir.string() + " cannot be used: " +
                             errno_text() + " (run ctx init)");
  }
  if (!S_ISDIR(st.st_mode)) {
    throw FailedPrecondition("state directory " + dir.string() + " is not a directory");
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    throw FailedPrecondition("state directory " + dir.string() +
                             " is not private (it must be owned by this user with mode 0700)");
  }
}

}  // namespace

struct Server::Impl {
  explicit Impl(ServerOptions opts, MethodTable table)
      : options(std::move(opts)),
        methods(std::move(table)),
        io(static_cast<int>(options.io_threads == 0 ? 1 : options.io_threads)),
        workers(options.worker_threads == 0 ? 1 : options.worker_threads) {}
  // Also when Server's constructor throws after taking the lock: the lock goes with it.
  ~Impl() {
    if (lock_fd >= 0) ::close(lock_fd);
    if (dir_fd >= 0) ::close(dir_fd);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void start_accept();
  void begin_stop();
  void forget(Connection* connection);
  void log_request(const std::string& method, const core::Json& id, int code,
                   Clock::time_point started);
  void log_stop(const char* reason);
  void take_lock(const fs::path& lock_path);
  void start_watch();
  std::optional<const char*> why_stop_by_itself();
  void remove_socket();

  ServerOptions options;
  MethodTable methods;
  fs::path socket_path;
  int lock_fd = -1;
  int dir_fd = -1;             // the state dir as opened at start: follows it when it is moved
  struct stat dir_stat {};     // the state dir's identity at start
  struct stat socket_stat {};  // the socket file's identity once published
  // When the last connection closed (or the server started): the idle time runs from here.
  std::atomic<Clock::rep> last_active{Clock::now().time_since_epoch().count()};
  std::atomic<bool> stopping{false};
  std::mutex mutex;  // connections, log
  std::map<Connection*, std::weak_ptr<Connection>> connections;
  asio::io_context io;
  asio::strand<asio::io_context::executor_type> strand{io.get_executor()};
  Protocol::acceptor acceptor{strand};
  std::optional<asio::signal_set> signals;
  asio::steady_timer drain_timer{strand};
  asio::steady_timer watch_timer{strand};
  bool removed_socket = false;  // guarded by strand (or single-threaded destruction)
  asio::thread_pool workers;
};

namespace {

// One client: reads a line, runs its request on the worker pool under the deadline, writes the
// reply, reads the next. All state is touched only on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& server, Protocol::socket socket)
      : server_(server),
        socket_(std::move(socket)),
        buffer_(server.options.max_request_bytes + 1),
        deadline_(socket_.get_executor()) {}

  void start() { read_next(); }

  // The server is stopping: an idle connection with nothing buffered closes; a busy one finishes.
  void on_stop() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      if (self->reading_) {
        boost::system::error_code ignored;
        self->socket_.cancel(ignored);
      }
    });
  }

  void force_close() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
  }

 private:
  bool has_pending_bytes() {
    boost::system::error_code ec;
    return buffer_.size() > 0 || socket_.available(ec) > 0;
  }

  void read_next() {
    if (closed_) return;
    if (server_.stopping.load() && !has_pending_bytes()) {
      close();
      return;
    }
    reading_ = true;
    asio::async_read_until(
        socket_, buffer_, '\n',
        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
          self->reading_ = false;
          self->on_read(ec, n);
        });
  }

  void on_read(boost::system::error_code ec, std::size_t n) {
    if (ec == asio::error::not_found) {  // the buffer filled up without a newline
      const auto started = Clock::now();
      const int code = kInvalidRequest;
      server_.log_request("", nullptr, code, started);
      write(error_reply(nullptr, code,
                        "request too large: a message must be at most " +
                            std::to_string(server_.options.max_request_bytes) +
                            " bytes before its newline"),
            /*close_after=*/true);
      return;
    }
    if (ec == asio::error::operation_aborted && !closed_) {
      read_next();  // stop() cancelled an idle read: serve what is already here, else close
      return;
    }
    if (ec) {
      close();
      return;
    }
    std::string line(asio::buffers_begin(buffer_.data()),
                     asio::buffers_begin(buffer_.data()) + static_cast<std::ptrdiff_t>(n - 1));
    buffer_.consume(n);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    handle(line);
  }

  void handle(const std::string& line) {
    const auto started = Clock::now();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      read_next();
      return;
    }
    core::Json request = core::Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (request.is_discarded()) {
      server_.log_request("", nullptr, kParseError, started);
      write(error_reply(nullptr, kParseError, "parse error: the message is not valid JSON"), false);
      return;
    }
    if (request.is_array()) {
      server_.log_request("", nullptr, kInvalidRequest, started);
      write(error_reply(nullptr, kInvalidRequest, "invalid request: batches are not supported"),
            false);
      return;
    }
    core::Json id = nullptr;
    bool has_id = false;
    if (request.is_object()) {
      if (const auto it = request.find("id"); it != request.end()) {
        if (it->is_string() || it->is_number() || it->is_null()) {
          id = *it;
          has_id = true;
        } else {
          server_.log_request("", nullptr, kInvalidRequest, started);
          write(error_reply(nullptr, kInvalidRequest,
                            "invalid request: id must be a string, a number or null"),
                false);
          return;
        }
      }
    }
    const auto invalid = [&](const std::string& why) {
      server_.log_request("", id, kInvalidRequest, started);
      write(error_reply(id, kInvalidRequest, "invalid request: " + why), false);
    };
    if (!request.is_object()) return invalid("a request must be a JSON object");
    const auto version = request.find("jsonrpc");
    if (version == request.end() || *version != "2.0") return invalid("jsonrpc must be \"2.0\"");
    const auto method = request.find("method");
    if (method == request.end() || !method->is_string()) {
      return invalid("method must be a string");
    }
    core::Json params = nullptr;
    if (const auto it = request.find("params"); it != request.end()) {
      if (!it->is_object() && !it->is_array()) {
        return invalid("params must be an object or an array");
      }
      params = std::move(*it);
    }
    const Method* handler = server_.methods.find(method->get_ref<const std::string&>());
    if (handler == nullptr) {
      server_.log_request("", id, kMethodNotFound, started);
      if (!has_id) return read_next();
      write(error_reply(id, kMethodNotFound,
                        "method not found: " + method->get<std::string>().substr(0, 128)),
            false);
      return;
    }
    if (handler->fast) {
      std::optional<std::string> known;
      try {
        known = handler->fast(params);
      } catch (...) {
        known.reset();  // the worker's handler decides, errors included
      }
      if (known) {
        server_.log_request(method->get_ref<const std::string&>(), id, 0, started);
        if (!has_id) return read_next();
        // The reply as nlohmann writes it (keys in order), around the already encoded result.
        out_ = "{\"id\":";
        out_ += id.dump(-1, ' ', false, core::Json::error_handler_t::replace);
        out_ += ",\"jsonrpc\":\"2.0\",\"result\":";
        out_ += *known;
        out_ += "}\n";
        send(false);
        return;
      }
    }
    dispatch(handler->handler, method->get<std::string>(), std::move(params), std::move(id),
             has_id, started);
  }

  void dispatch(const Handler& handler, std::string method, core::Json params, core::Json id,
                bool has_id, Clock::time_point started) {
    const std::uint64_t seq = ++seq_;
    pending_ = true;
    // Set when the deadline answered first: a request still queued for a worker then never runs
    // (its client was told it failed; one already running finishes, its result unsent).
    auto abandoned = std::make_shared<std::atomic<bool>>(false);
    deadline_.expires_after(server_.options.deadline);
    deadline_.async_wait([self = shared_from_this(), seq, method, id, has_id, started,
                          abandoned](boost::system::error_code ec) {
      if (ec || !self->pending_ || self->seq_ != seq) return;
      abandoned->store(true);
      self->pending_ = false;
      self->server_.log_request(method, id, kDeadlineExceeded, started);
      if (!has_id) return self->read_next();
      self->write(error_reply(id, kDeadlineExceeded,
                              "deadline exceeded: " + method + " did not finish in " +
                                  std::to_string(self->server_.options.deadline.count()) + " ms"),
                  false);
    });
    auto guard = asio::make_work_guard(server_.io);
    asio::post(server_.workers, [self = shared_from_this(), &handler, seq,
                                 method = std::move(method), params = std::move(params),
                                 id = std::move(id), has_id, started, guard = std::move(guard),
                                 abandoned = std::move(abandoned)]() mutable {
      if (abandoned->load()) return;
      core::Json reply;
      int code = 0;
      try {
        reply = core::Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", handler(params)}};
      } catch (const InvalidParams& e) {
        code = kInvalidParams;
        reply = error_reply(id, code, std::string("invalid params: ") + e.what());
      } catch (const Error& e) {
        // The error's own code (style §6.2: the same integer as ErrorCode), so a client can tell
        // "back off" (unavailable) from "re-read" (aborted) from "not until the state changes".
        code = rpc_code_of(e);
        reply = error_reply(id, code, e.what());
      } catch (...) {
        code = kInternalError;
        reply = error_reply(id, code, "internal error");
      }
      asio::post(self->socket_.get_executor(), [self, seq, method = std::move(method),
                                                reply = std::move(reply), id = std::move(id),
                                                code, has_id, started]() mutable {
        if (!self->pending_ || self->seq_ != seq) return;  // the deadline already answered
        self->pending_ = false;
        self->deadline_.cancel();
        self->server_.log_request(method, id, code, started);
        if (!has_id) return self->read_next();
        self->write(std::move(reply), false);
      });
      guard.reset();
    });
  }

  void write(const core::Json& reply, bool close_after) {
    if (closed_) return;
    out_ = reply.dump(-1, ' ', false, core::Json::error_handler_t::replace);
    out_ += '\n';
    send(close_after);
  }

  // Writes out_ (one reply line), then reads the next request or closes.
  void send(bool close_after) {
    if (closed_) return;
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this(), close_after](boost::system::error_code ec,
                                                              std::size_t) {
                        if (ec || close_after) return self->close();
                        self->read_next();
                      });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    deadline_.cancel();
    socket_.shutdown(Protocol::socket::shutdown_both, ignored);
    socket_.close(ignored);
    server_.forget(this);
  }

  Server::Impl& server_;
  Protocol::socket socket_;
  asio::streambuf buffer_;
  asio::steady_timer deadline_;
  std::string out_;
  std::uint64_t seq_ = 0;
  bool pending_ = false;
  bool reading_ = false;
  bool closed_ = false;
};

}  // namespace

void Server::Impl::log_request(const std::string& method, const core::Json& id, int code,
                               Clock::time_point started) {
  if (options.log == nullptr || !options.log_requests) return;
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count();
  core::Json line{{"event", "rpc"},
                  {"method", method.empty() ? core::Json(nullptr) : core::Json(method)},
                  {"status", code == 0 ? "ok" : "error"},
                  {"duration_us", micros}};
  if (code != 0) line["code"] = code;
  if (id.is_number() || (id.is_string() && id.get_ref<const std::string&>().size() <= 64)) {
    line["id"] = id;
  } else {
    line["id"] = nullptr;
  }
  std::string text = line.dump(-1, ' ', false, core::Json::error_handler_t::replace);
  text += '\n';
  const std::lock_guard lock(mutex);
  options.log->write(text.data(), static_cast<std::streamsize>(text.size()));  // one write(2)
  options.log->flush();
}

void Server::Impl::log_stop(const char* reason) {
  if (options.log == nullptr) return;
  std::string text = core::Json{{"event", "stop"}, {"reason", reason}}.dump(
      -1, ' ', false, core::Json::error_handler_t::replace);
  text += '\n';
  const std::lock_guard lock(mutex);
  options.log->write(text.data(), static_cast<std::streamsize>(text.size()));
  options.log->flush();
}

// The per-state-dir lock: held for the server's life on lock_fd (flock, so it goes with the
// process however it ends). An inherited description must be of this very file and lockable.
void Server::Impl::take_lock(const fs::path& lock_path) {
  const fs::path& dir = options.state_dir;
  if (options.inherited_lock_fd >= 0) {
    const int fd = options.inherited_lock_fd;
    struct stat held {};
    struct stat named {};
    if (::fstat(fd, &held) != 0 || !S_ISREG(held.st_mode) ||
        ::lstat(lock_path.c_str(), &named) != 0 || held.st_dev != named.st_dev ||
        held.st_ino != named.st_ino || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      throw FailedPrecondition(
          "the server lock handed down to ctx serve is not the lock of state directory " +
          dir.string());
    }
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    lock_fd = fd;
    return;
  }
  lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock_fd < 0) {
    throw SystemError("cannot open " + lock_path.string() + ": " + errno_text());
  }
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(lock_fd);
    lock_fd = -1;
    if (error == EWOULDBLOCK) {
      throw FailedPrecondition("another ctx serve is already running for state directory " +
                               dir.string());
    }
    throw SystemError("cannot lock " + lock_path.string() + ": " + std::strerror(error));
  }
}

// Why the server should stop now without being asked, if it should: its state dir is no longer
// at its path (moved, removed, replaced), its socket file is gone or another file (nobody can
// reach it), or it was idle for idle_exit.
std::optional<const char*> Server::Impl::why_stop_by_itself() {
  struct stat st {};
  if (::lstat(options.state_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      st.st_dev != dir_stat.st_dev || st.st_ino != dir_stat.st_ino) {
    return "the state directory was moved or removed";
  }
  if (::lstat(socket_path.c_str(), &st) != 0 || st.st_dev != socket_stat.st_dev ||
      st.st_ino != socket_stat.st_ino) {
    return "the socket file was removed or replaced";
  }
  if (options.idle_exit.count() > 0) {
    const std::lock_guard lock(mutex);
    const Clock::time_point since{Clock::duration(last_active.load())};
    if (connections.empty() && Clock::now() - since >= options.idle_exit) return "idle";
  }
  return std::nullopt;
}

void Server::Impl::start_watch() {  // on strand
  if (options.watch_interval.count() <= 0 || stopping.load()) return;
  auto interval = options.watch_interval;
  if (options.idle_exit.count() > 0) interval = std::min(interval, options.idle_exit);
  watch_timer.expires_after(interval);
  watch_timer.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping.load()) return;
    if (const auto reason = why_stop_by_itself()) {
      log_stop(*reason);
      begin_stop();
      return;
    }
    start_watch();
  });
}

// Removes the socket file this server published, wherever its state dir is now, and only that
// file (not one another server put at the same name since).
void Server::Impl::remove_socket() {
  if (removed_socket || socket_path.empty()) return;
  removed_socket = true;
  struct stat st {};
  if (dir_fd >= 0 && ::fstatat(dir_fd, kSocketFile, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      st.st_dev == socket_stat.st_dev && st.st_ino == socket_stat.st_ino) {
    ::unlinkat(dir_fd, kSocketFile, 0);
  }
}

void Server::Impl::start_accept() {
  acceptor.async_accept(asio::make_strand(io), [this](boost::system::error_code ec,
                                                      Protocol::socket socket) {
    if (ec || stopping.load()) return;  // closed by stop(); a late socket just closes
    auto connection = std::make_shared<Connection>(*this, std::move(socket));
    {
      const std::lock_guard lock(mutex);
      connections.emplace(connection.get(), connection);
    }
    connection->start();
    start_accept();
  });
}

void Server::Impl::begin_stop() {  // on strand
  if (stopping.exchange(true)) return;
  boost::system::error_code ignored;
  acceptor.close(ignored);
  remove_socket();
  watch_timer.cancel();
  if (signals) {
    // Removed from the set, SIGTERM and SIGINT get their default action back: a second one
    // ends a server whose drain waits on a stuck request, as an operator expects.
    signals->clear(ignored);
    signals->cancel(ignored);
  }
  std::vector<std::shared_ptr<Connection>> live;
  {
    const std::lock_guard lock(mutex);
    for (auto& [raw, weak] : connections) {
      if (auto strong = weak.lock()) live.push_back(std::move(strong));
    }
  }
  if (live.empty()) return;
  for (auto& connection : live) connection->on_stop();
  drain_timer.expires_after(options.drain_timeout);
  drain_timer.async_wait([this](boost::system::error_code ec) {
    if (ec) return;  // every connection drained
    std::vector<std::shared_ptr<Connection>> rest;
    {
      const std::lock_guard lock(mutex);
      for (auto& [raw, weak] : connections) {
        if (auto strong = weak.lock()) rest.push_back(std::move(strong));
      }
    }
    for (auto& connection : rest) connection->force_close();
  });
}

void Server::Impl::forget(Connection* connection) {
  bool drained = false;
  {
    const std::lock_guard lock(mutex);
    connections.erase(connection);
    drained = connections.empty();
    last_active = Clock::now().time_since_epoch().count();
  }
  if (drained && stopping.load()) {
    asio::post(strand, [this] { drain_timer.cancel(); });
  }
}

Server::Server(ServerOptions options, MethodTable methods)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(methods))) {
  Impl& impl = *impl_;
  const fs::path& dir = impl.options.state_dir;
  if (!dir.is_absolute()) {
    throw InvalidArgument("state directory " + dir.string() + " must be an absolute path");
  }
  require_private_dir(dir);
  impl.take_lock(dir / kSocketLockFile);
  impl.dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (impl.dir_fd < 0 || ::fstat(impl.dir_fd, &impl.dir_stat) != 0) {
    throw SystemError("cannot open state directory " + dir.string() + ": " + errno_text());
  }
  impl.socket_path = dir / kSocketFile;
  // Bound and listening under a staging name, then renamed into place: a client that finds the
  // socket file can always connect (never "connection refused" between bind and listen).
  const fs::path staged = dir / (std::string(kSocketFile) + ".new");
  if (staged.native().size() >= sizeof(sockaddr_un::sun_path)) {
    throw InvalidArgument("socket path " + impl.socket_path.string() + " is longer than " +
                          std::to_string(sizeof(sockaddr_un::sun_path) - 5) + " bytes");
  }
  struct stat st {};
  if (::lstat(impl.socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      throw FailedPrecondition(impl.socket_path.string() +
                               " exists and is not a socket; remove it to serve");
    }
    ::unlink(impl.socket_path.c_str());  // stale: we hold the lock, so no server owns it
  }
  // SIGTERM/SIGINT are handled from before the socket is published: a client that sees the
  // socket may signal the server at once and it still drains and removes the socket.
  if (impl.options.handle_signals) impl.signals.emplace(impl.strand, SIGTERM, SIGINT);
  ::unlink(staged.c_str());  // a dead server's staging name (we hold the lock)
  const Protocol::endpoint endpoint(staged.string());
  impl.acceptor.open(endpoint.protocol());
  const mode_t old_mask = ::umask(0177);
  boost::system::error_code ec;
  impl.acceptor.bind(endpoint, ec);
  ::umask(old_mask);
  if (ec) throw SystemError("cannot bind " + impl.socket_path.string() + ": " + ec.message());
  ::chmod(staged.c_str(), 0600);
  impl.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec && ::lstat(staged.c_str(), &impl.socket_stat) != 0) {
    ec = boost::system::error_code(errno, boost::system::system_category());
  }
  if (ec || ::rename(staged.c_str(), impl.socket_path.c_str()) != 0) {
    const std::string why = ec ? ec.message() : std::string(std::strerror(errno));
    ::unlink(staged.c_str());
    throw SystemError("cannot listen on " + impl.socket_path.string() + ": " + why);
  }
}

Server::~Server() {
  Impl& impl = *impl_;
  impl.stopping = true;
  boost::system::error_code ignored;
  impl.io.stop();
  impl.workers.join();
  impl.acceptor.close(ignored);
  impl.remove_socket();
}

void Server::run() {
  Impl& impl = *impl_;
  asio::post(impl.strand, [&impl] {
    if (impl.stopping.load()) return impl.begin_stop();
    impl.start_accept();
    impl.last_active = Clock::now().time_since_epoch().count();
    impl.start_watch();
    if (impl.signals) {
      impl.signals->async_wait([&impl](boost::system::error_code ec, int) {
        if (!ec) impl.begin_stop();
      });
    }
  });
  std::vector<std::thread> threads;
  const std::size_t count = impl.options.io_threads == 0 ? 1 : impl.options.io_threads;
  for (std::size_t i = 1; i < count; ++i) threads.emplace_back([&impl] { impl.io.run(); });
  impl.io.run();
  for (auto& thread : threads) thread.join();
}

void Server::stop() {
  Impl& impl = *impl_;
  asio::post(impl.strand, [&impl] { impl.begin_stop(); });
}

const fs::path& Server::socket_path() const noexcept { return impl_->socket_path; }

}  // namespace ctx::server
