import Foundation

protocol Shape {
    func area() -> Double
}

struct Square: Shape {
    let side: Double

    func area() -> Double {
        return side * side
    }
}

class Canvas {
    var shapes: [Shape] = []

    init() {}

    deinit {
        shapes.removeAll()
    }

    subscript(index: Int) -> Shape {
        return shapes[index]
    }
}

let unit = Square(side: 1)

func total(_ shapes: [Shape]) -> Double {
    return shapes.reduce(0) { $0 + $1.area() }
}
