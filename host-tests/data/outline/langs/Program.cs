using System;

namespace Demo
{
    public interface IGreeter
    {
        string Greet(string name);
    }

    public class Greeter : IGreeter
    {
        public string Greet(string name)
        {
            return $"Hello, {name}";
        }

        private static void Main(string[] args)
        {
            Console.WriteLine(new Greeter().Greet("world"));
        }
    }
}
