// Shapes for the demo.
import { log } from "./log.js";

/**
 * A shape with an area.
 */
class Shape {
  constructor(name) {
    this.name = name;
  }

  area() {
    return 0;
  }
}

const Square = class extends Shape {};

function* ids() {
  yield 1;
}

export function describe(shape) {
  return `${shape.name}: ${shape.area()}`;
}
const double = (x) => x * 2;
var legacy = function (a) {
  return a;
};
