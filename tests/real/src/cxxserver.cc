// A small C++ server whose memory is known to the byte, for the test that
// names a program's own functions, not std:: internals, as the owners of
// its memory.  ROUNDS rounds; in each, WORKERS threads serve REQUESTS
// requests each, then the server rests PAUSE_MS (so a profiler dumping on a
// timer catches every round).  A request:
//   - is copied into a 3 MiB arena made at startup (Arena::Arena), reset
//     after each round;
//   - opens a Session whose constructor allocates its state, a vector of
//     SESSION_STATE bytes (Session::Session); the Session object itself is
//     made by handle_request; sessions are never evicted from an
//     unordered_map whose nodes and buckets SessionStore::add allocates;
//   - writes a line to a plugin loaded with dlopen (plugin_log_request in
//     libcxxplugin.so, which keeps every line);
//   - builds its response in scratch space freed when the request ends;
//   - caches the response (ResponseCache::put): the cache is cleared at
//     the start of the second half of the rounds.
// Every container is a global, so static destructors free it all at exit.
//
// Usage: cxxserver [HANDCOUNT]  (or CXXSERVER_HANDCOUNT=FILE).  After
// the last round the server writes to HANDCOUNT a line "NAME BYTES COUNT"
// for each of its functions that holds memory then: the bytes and blocks
// it allocated, itself or through the std:: code it called, still in use;
// they stay so until main returns.  Then it idles CXXSERVER_IDLE_MS
// (default PAUSE_MS) and prints a summary to stdout, whose buffer is the
// first block allocated after the idle: a heap profiler that dumps on a
// timer only from inside malloc (gperftools) dumps there.  The server
// never asks a profiler for a dump.
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

enum {
	ROUNDS = 8,
	WORKERS = 4,
	REQUESTS = 144, // a worker's requests in a round
	PAUSE_MS = 80,
	SESSION_STATE = 4096,
	ARENA_SIZE = 3 << 20,
	REQUEST_SIZE = 512,
	SCRATCH_SIZE = 16384,
	RESPONSE_SIZE = 400,
};

// Request lines live here until the round ends: one block for the run.
class Arena {
public:
	explicit Arena(size_t size);
	~Arena() { free(base_); }
	char *take(size_t n);
	void reset() { used_ = 0; }
	size_t size() const { return size_; }

private:
	char *base_;
	size_t size_;
	std::atomic<size_t> used_;
};

Arena::Arena(size_t size)
	: base_(static_cast<char *>(malloc(size))), size_(size), used_(0)
{
	if (!base_) {
		fprintf(stderr, "cxxserver: out of memory for the arena\n");
		exit(1);
	}
	// Poisoned, so that a request reading what it did not write shows;
	// this also makes every page of the arena resident from the start.
	memset(base_, 0xa5, size);
}

char *Arena::take(size_t n)
{
	size_t at = used_.fetch_add(n);

	if (at + n > size_) {
		fprintf(stderr, "cxxserver: the arena is full\n");
		abort();
	}
	return base_ + at;
}

class Session {
public:
	explicit Session(uint64_t id);
	size_t state_bytes() const { return state_.capacity(); }

private:
	uint64_t id_;
	std::vector<char> state_;
};

Session::Session(uint64_t id) : id_(id), state_(SESSION_STATE)
{
	snprintf(state_.data(), state_.size(), "session %llu",
		 (unsigned long long)id_);
}

using SessionMap = std::unordered_map<uint64_t, std::unique_ptr<Session>>;
// libstdc++'s node for it: the next pointer and the value (an integer key's
// hash is not cached).  Named so the hand count can say its size.
using SessionNode = std::__detail::_Hash_node<
	SessionMap::value_type,
	std::__cache_default<uint64_t, std::hash<uint64_t>>::value>;

class SessionStore {
public:
	void add(uint64_t id, std::unique_ptr<Session> session);
	size_t size() const { return sessions_.size(); }
	size_t state_bytes() const;
	size_t table_bytes() const;
	void save_and_close(); // CXXSERVER_SAVE: see below

private:
	std::mutex mu_;
	SessionMap sessions_;
};

void SessionStore::add(uint64_t id, std::unique_ptr<Session> session)
{
	std::lock_guard<std::mutex> lock(mu_);

	sessions_.emplace(id, std::move(session));
}

size_t SessionStore::state_bytes() const
{
	size_t bytes = 0;

	for (const auto &s : sessions_)
		bytes += s.second->state_bytes();
	return bytes;
}

// The nodes, and the bucket array unless it is the single bucket kept
// inside the map.
size_t SessionStore::table_bytes() const
{
	size_t buckets = sessions_.bucket_count();

	return sessions_.size() * sizeof(SessionNode) +
	       (buckets > 1 ? buckets * sizeof(void *) : 0);
}

using CacheMap = std::map<uint64_t, std::string>;
using CacheNode = std::_Rb_tree_node<CacheMap::value_type>;

class ResponseCache {
public:
	void put(uint64_t id, const char *body, size_t len);
	void clear();
	size_t bytes() const;
	size_t blocks() const;

private:
	std::mutex mu_;
	CacheMap entries_;
};

void ResponseCache::put(uint64_t id, const char *body, size_t len)
{
	std::lock_guard<std::mutex> lock(mu_);

	entries_.try_emplace(id, body, len);
}

void ResponseCache::clear()
{
	std::lock_guard<std::mutex> lock(mu_);

	entries_.clear();
}

// A node each, and each response's body unless it fits in the string.
size_t ResponseCache::bytes() const
{
	size_t bytes = entries_.size() * sizeof(CacheNode);

	for (const auto &e : entries_)
		if (e.second.capacity() > 15)
			bytes += e.second.capacity() + 1;
	return bytes;
}

size_t ResponseCache::blocks() const
{
	size_t blocks = entries_.size();

	for (const auto &e : entries_)
		blocks += e.second.capacity() > 15;
	return blocks;
}

static Arena arena(ARENA_SIZE);
static SessionStore sessions;
static ResponseCache cache;

static void (*log_request)(uint64_t id, int worker, const char *request);
static void (*plugin_hand_count)(FILE *out);

static void load_plugin(size_t expected_requests)
{
	void *plugin = dlopen("libcxxplugin.so", RTLD_NOW);
	void (*init)(size_t);

	if (!plugin) {
		fprintf(stderr, "cxxserver: %s\n", dlerror());
		exit(1);
	}
	init = reinterpret_cast<void (*)(size_t)>(dlsym(plugin, "plugin_init"));
	log_request = reinterpret_cast<void (*)(uint64_t, int, const char *)>(
		dlsym(plugin, "plugin_log_request"));
	plugin_hand_count = reinterpret_cast<void (*)(FILE *)>(
		dlsym(plugin, "plugin_hand_count"));
	if (!init || !log_request || !plugin_hand_count) {
		fprintf(stderr, "cxxserver: libcxxplugin.so lacks an entry\n");
		exit(1);
	}
	init(expected_requests);
}

static void handle_request(int worker, uint64_t id)
{
	char *request = arena.take(REQUEST_SIZE);
	snprintf(request, REQUEST_SIZE, "GET /item/%llu HTTP/1.1",
		 (unsigned long long)id);

	auto session = std::make_unique<Session>(id);

	std::vector<char> scratch(SCRATCH_SIZE); // freed when we return
	int n = snprintf(scratch.data(), scratch.size(),
			 "HTTP/1.1 200 OK\r\nX-Session: %llu\r\n\r\n",
			 (unsigned long long)id);
	memset(scratch.data() + n, 'x', RESPONSE_SIZE - n);

	log_request(id, worker, request);
	cache.put(id, scratch.data(), RESPONSE_SIZE);
	sessions.add(id, std::move(session));
}

static void serve(int round, int worker)
{
	for (int i = 0; i < REQUESTS; i++) {
		uint64_t id = ((uint64_t)round * WORKERS + worker) * REQUESTS +
			      i + 1;

		handle_request(worker, id);
	}
}

// Counted from the containers as they are now, not from the constants.
static int write_hand_count(const char *path)
{
	FILE *out = fopen(path, "w");

	if (!out) {
		perror(path);
		return -1;
	}
	fprintf(out, "Session::Session %zu %zu\n", sessions.state_bytes(),
		sessions.size());
	fprintf(out, "Arena::Arena %zu 1\n", arena.size());
	fprintf(out, "ResponseCache::put %zu %zu\n", cache.bytes(),
		cache.blocks());
	fprintf(out, "handle_request %zu %zu\n",
		sessions.size() * sizeof(Session), sessions.size());
	fprintf(out, "SessionStore::add %zu %zu\n", sessions.table_bytes(),
		sessions.size() + 1);
	plugin_hand_count(out);
	return fclose(out) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : getenv("CXXSERVER_HANDCOUNT");
	const char *idle = getenv("CXXSERVER_IDLE_MS");

	load_plugin((size_t)ROUNDS * WORKERS * REQUESTS);
	for (int round = 0; round < ROUNDS; round++) {
		std::thread workers[WORKERS];

		if (round == ROUNDS / 2)
			cache.clear();
		for (int w = 0; w < WORKERS; w++)
			workers[w] = std::thread(serve, round, w);
		for (std::thread &t : workers)
			t.join();
		arena.reset();
		std::this_thread::sleep_for(std::chrono::milliseconds(PAUSE_MS));
	}
	if (path && write_hand_count(path) != 0)
		return 1;
	// Idle before shutting down: nothing is allocated or freed until the
	// summary below (whose stdout buffer is the first block after it).
	std::this_thread::sleep_for(
		std::chrono::milliseconds(idle ? atoi(idle) : PAUSE_MS));
	printf("cxxserver: %d requests served, %zu sessions open\n",
	       ROUNDS * WORKERS * REQUESTS, sessions.size());
	return 0;
}

// With CXXSERVER_SAVE=1 set, the first static destructor saves the
// sessions before they go: session by session, a record of its id and
// state (SESSION_STATE bytes) is copied into blocks of SAVE_RECORD bytes,
// written nowhere, and the session closed, so that the bytes in use do
// not grow; then the blocks are freed but the last, which stays.  Freed
// below one that stays, they stay in the allocator's arena, resident: the
// components' total is then highest after teardown, the bytes in use are
// not.
enum { SAVE_RECORD = 64 << 10 };

void SessionStore::save_and_close()
{
	std::vector<std::vector<char>> records;

	records.reserve(sessions_.size() * SESSION_STATE / SAVE_RECORD + 1);
	for (auto s = sessions_.begin(); s != sessions_.end();
	     s = sessions_.erase(s)) {
		if (records.empty() ||
		    records.back().size() + SESSION_STATE > SAVE_RECORD) {
			records.emplace_back();
			records.back().reserve(SAVE_RECORD);
		}
		std::vector<char> &r = records.back();
		size_t at = r.size();

		r.resize(at + SESSION_STATE);
		snprintf(&r[at], SESSION_STATE, "session %llu",
			 (unsigned long long)s->first);
	}
	if (!records.empty())
		new std::vector<char>(std::move(records.back())); // stays
}

// Destroyed first (made after the containers): the sessions are still
// there.
static struct Saver {
	~Saver()
	{
		const char *save = getenv("CXXSERVER_SAVE");

		if (save && atoi(save))
			sessions.save_and_close();
	}
} saver;
