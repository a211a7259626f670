<?php

namespace App;

function greet(string $name): string
{
    return "Hello, $name";
}

class Controller
{
    private array $routes = [];

    public function handle(string $path): string
    {
        return $this->routes[$path] ?? greet($path);
    }

    public static function make(): self
    {
        return new self();
    }
}
