package demo

typealias Name = String

interface Greeter {
    fun greet(name: Name): String
}

enum class Mood { HAPPY, SAD }

data class Person(val name: Name, val mood: Mood)

object Registry {
    val people = mutableListOf<Person>()

    fun add(person: Person) {
        people.add(person)
    }
}

fun main() {
    Registry.add(Person("Ada", Mood.HAPPY))
}
