#include <string>

namespace geo {

struct Point {
    double x, y;
};

class Circle {
public:
    explicit Circle(double r);
    double area() const;

private:
    double radius;
};

double Circle::area() const {
    return 3.14159 * radius * radius;
}

}  // namespace geo

double geo::distance(const geo::Point& a) {
    return a.x;
}

typedef geo::Circle circle_t;

int main() {
    return 0;
}
