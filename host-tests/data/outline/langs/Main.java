package demo;

import java.util.List;

public class Main {
    interface Visitor {
        void visit(String item);
    }

    private final List<String> items = List.of("a", "b");

    public static void main(String[] args) {
        new Main().walk(System.out::println);
    }

    void walk(Visitor visitor) {
        for (String item : items) {
            visitor.visit(item);
        }
    }
}
