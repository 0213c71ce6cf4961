// Inlining of every kind, for comparing dmprof's DWARF reader with
// libbfd's (dwarf.sh): templates, containers, lambdas, chains of inline
// functions, static and extern "C" ones (whose DW_AT_name is not a
// linkage name), functions split into hot and cold parts.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

extern "C" {
static inline int c_twice(int x) { return x * 2 + (x > 100 ? std::rand() : 0); }
int c_entry(int x) { return c_twice(x) + c_twice(x + 1); }
}

namespace shapes {
struct Shape {
	virtual ~Shape() = default;
	virtual double area() const = 0;
};
struct Square : Shape {
	double s;
	explicit Square(double v) : s(v) {}
	double area() const override { return s * s; }
};
template <typename T> struct Box {
	std::vector<T> items;
	void add(const T &t) { items.push_back(t); }
	T sum() const
	{
		T r{};
		for (const auto &i : items)
			r += i;
		return r;
	}
};
} // namespace shapes

static inline __attribute__((always_inline)) int leaf(int x)
{
	if (x < 0)
		std::abort();
	return x + 1;
}
static inline __attribute__((always_inline)) int middle(int x)
{
	return leaf(x) * leaf(x + 2);
}
static __attribute__((noinline)) int outer(int x)
{
	return middle(x) + middle(x * 3);
}

static __attribute__((noinline)) std::string name_of(int i)
{
	std::map<int, std::string> m;
	for (int k = 0; k < i; k++)
		m[k] = std::to_string(k * 7);
	auto it = m.find(i / 2);
	return it == m.end() ? std::string("none") : it->second;
}

int main(int argc, char **argv)
{
	shapes::Box<double> b;
	std::vector<std::unique_ptr<shapes::Shape>> v;
	auto add = [&](double d) {
		v.push_back(std::make_unique<shapes::Square>(d));
		b.add(v.back()->area());
	};
	for (int i = 0; i < argc + 3; i++)
		add(i * 1.5);
	std::printf("%g %d %d %s\n", b.sum(), outer(argc), c_entry(argc),
		    name_of(argc + 5).c_str());
	if (argc > 5) {
		std::fprintf(stderr, "%s: cold\n", argv[0]);
		std::exit(1);
	}
	return 0;
}
