// A C++ heap for make bench's core case: about 10 million blocks in 1 GB
// (with the default N), the kinds a C++ server holds, pointing at each
// other, so that typing them and searching them for leaks is real work.
// Then it prints "ready" and waits for a signal (for gcore to dump it).
//
// Usage: core_heap [N]     N objects (default 3,350,000)
//
// In groups of 1,000 objects, each group held in a global vector:
//   - objects of four polymorphic classes (a vtable pointer first),
//     linked in a list through the group and each pointing at an earlier
//     one of its group; Session 80, Shape 96, Widget 96, Conn 208 bytes;
//   - a name, a std::string, 3 in 4 long (a body of 17 to 145 bytes);
//   - the group's std::vector of them, a std::unordered_map of every
//     fourth by id (nodes and buckets), a std::map of every eighth's
//     name (tree nodes), each Widget's std::vector<int> and list of 0 to
//     4 malloc'd cells of 16 to 184 bytes;
//   - leaks: one group in 16 dropped whole (its blocks point at each
//     other, nothing outside at them), and one object in 64 followed by
//     a block of 24 to 280 bytes that nothing points at.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#define GROUP 1000

namespace {

struct Cell {
	Cell *next;
	size_t len;
	char data[];
};

struct Base {
	Base *next = nullptr, *peer = nullptr;
	std::string name;
	virtual ~Base() {}
	virtual int kind() const = 0;
};

struct Session : Base {
	unsigned long id = 0;
	double score = 0;
	int kind() const override { return 1; }
};

struct Shape : Base {
	double x = 0, y = 0, w = 0, h = 0;
	int kind() const override { return 2; }
};

struct Widget : Base {
	Cell *cells = nullptr;
	std::vector<int> values;
	int kind() const override { return 3; }
};

struct Conn : Base {
	int fd = -1;
	char buf[132] = { 0 };
	int kind() const override { return 4; }
};

struct Group {
	Base *head = nullptr;
	std::vector<Base *> all;
	std::unordered_map<unsigned long, Base *> by_id;
	std::map<int, std::string> names;
};

std::vector<Group *> groups;
unsigned long seed = 88172645463325252ul;

unsigned long rnd()
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

Base *make(unsigned long i)
{
	Base *b;

	switch (rnd() % 4) {
	case 0:
		b = new Session;
		break;
	case 1:
		b = new Shape;
		break;
	case 2: {
		Widget *w = new Widget;

		w->values.resize(4 + rnd() % 33, (int)i);
		for (unsigned long n = rnd() % 5; n; n--) {
			size_t len = 16 + rnd() % 169;
			Cell *c = (Cell *)malloc(len);

			if (!c)
				abort();
			c->next = w->cells;
			c->len = len;
			w->cells = c;
		}
		b = w;
		break;
	}
	default:
		b = new Conn;
		break;
	}
	if (rnd() % 4)
		b->name.assign(16 + rnd() % 129, (char)('a' + i % 26));
	else
		b->name = "obj";
	return b;
}

Group *make_group(unsigned long first, unsigned long n)
{
	Group *g = new Group;

	for (unsigned long i = first; i < first + n; i++) {
		Base *b = make(i);

		b->next = g->head;
		if (!g->all.empty())
			b->peer = g->all[rnd() % g->all.size()];
		g->head = b;
		g->all.push_back(b);
		if (i % 4 == 0)
			g->by_id[i] = b;
		if (i % 8 == 0)
			g->names[(int)i] = b->name;
		if (i % 64 == 0 && !malloc(24 + rnd() % 257))
			abort();
	}
	return g;
}

} // namespace

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], nullptr, 10) : 3350000;

	for (unsigned long i = 0; i < n; i += GROUP) {
		Group *g = make_group(i, n - i < GROUP ? n - i : GROUP);

		if (i / GROUP % 16 != 15)
			groups.push_back(g);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
