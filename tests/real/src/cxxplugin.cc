// The request-log plugin of cxxserver.cc, loaded with dlopen: a line per
// request kept for the whole run in a vector of std::string.  Each line is
// LINE_LEN characters, one heap block of LINE_LEN + 1 bytes allocated by
// libstdc++ on behalf of plugin_log_request; the vector's buffer is
// reserved once by plugin_init, so it never moves.  plugin_hand_count
// counts both from the containers themselves.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

enum { LINE_LEN = 1000 };

static std::mutex lines_mu;
static std::vector<std::string> lines;
static size_t reserved;

extern "C" void plugin_init(size_t expected_requests)
{
	std::lock_guard<std::mutex> lock(lines_mu);

	lines.reserve(expected_requests);
	reserved = lines.capacity();
}

extern "C" void plugin_log_request(uint64_t id, int worker,
				   const char *request)
{
	char line[LINE_LEN + 1];
	int n = snprintf(line, sizeof(line), "%llu worker=%d %s",
			 (unsigned long long)id, worker, request);

	if (n < 0)
		n = 0;
	if (n < LINE_LEN) // padded: every line has the same length
		memset(line + n, ' ', LINE_LEN - n);
	std::lock_guard<std::mutex> lock(lines_mu);
	lines.emplace_back(line, LINE_LEN);
}

// NAME BYTES COUNT of the blocks this plugin's functions hold now.  Had
// the vector outgrown its reservation, its buffer would have been
// reallocated by plugin_log_request: it is counted there then.
extern "C" void plugin_hand_count(FILE *out)
{
	std::lock_guard<std::mutex> lock(lines_mu);
	size_t bytes = 0, blocks = lines.size();
	size_t buffer = lines.capacity() * sizeof(std::string);

	for (const std::string &l : lines)
		bytes += l.capacity() + 1;
	if (lines.capacity() != reserved) {
		bytes += buffer;
		blocks++;
	}
	fprintf(out, "plugin_log_request %zu %zu\n", bytes, blocks);
	if (lines.capacity() == reserved && reserved > 0)
		fprintf(out, "plugin_init %zu 1\n", buffer);
}
