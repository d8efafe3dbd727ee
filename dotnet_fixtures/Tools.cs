// C# tools the tests (and the demo) host through the bridge. They use only
// System.ComponentModel.DescriptionAttribute and a ConcurrencySafe attribute that
// the bridge recognises by name, so they reference nothing of tether_clr.
using System;
using System.Collections.Generic;
using System.ComponentModel;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Tether.Fixtures
{
    [AttributeUsage(AttributeTargets.Method | AttributeTargets.Class)]
    public sealed class ConcurrencySafeAttribute : Attribute { }

    public enum Unit { Celsius, Fahrenheit }

    public sealed class Point
    {
        public int X { get; set; }
        public int Y { get; set; }
    }

    public static class Calculator
    {
        [Description("Adds two integers.")]
        public static int Add([Description("The first addend")] int a, [Description("The second addend")] int b)
        {
            return a + b;
        }

        [Description("Greets someone by name.")]
        public static string Greet(string name, string greeting = "Hello")
        {
            return greeting + ", " + name + "!";
        }

        [Description("Converts a temperature given in Celsius.")]
        public static double Convert(double celsius, Unit to = Unit.Fahrenheit)
        {
            return to == Unit.Celsius ? celsius : celsius * 9 / 5 + 32;
        }

        [Description("Sums integers, optionally scaled.")]
        public static long Sum(List<int> values, int? scale = null)
        {
            return values.Sum() * (scale ?? 1);
        }

        [Description("Builds a point.")]
        public static async Task<Point> MakePoint(int x, int y)
        {
            await Task.Yield();
            return new Point { X = x, Y = y };
        }

        [Description("Doubles a number without allocating a Task.")]
        public static ValueTask<int> Twice(int value)
        {
            return new ValueTask<int>(value * 2);
        }

        [Description("Moves a point.")]
        public static Point Move(Point point, int dx = 0)
        {
            return new Point { X = point.X + dx, Y = point.Y };
        }

        public static readonly List<string> Touched = new List<string>();

        [Description("Records a path; returns nothing.")]
        public static void Touch(string path)
        {
            lock (Touched) Touched.Add(path);
        }

        [Description("Records a path asynchronously; returns nothing.")]
        public static async Task TouchAsync(string path)
        {
            await Task.Yield();
            lock (Touched) Touched.Add(path);
        }

        [Description("Always fails synchronously.")]
        public static int Fail(string message)
        {
            throw new InvalidOperationException(message);
        }

        [Description("Always fails after an await.")]
        public static async Task<int> FailAsync(string message)
        {
            await Task.Yield();
            throw new KeyNotFoundException(message);
        }

        [Description("Fails with nested exceptions.")]
        public static int FailWrapped()
        {
            throw new AggregateException(new TimeoutException("backend timed out"));
        }

        // Not a tool: no [Description].
        public static int Hidden() { return 42; }
    }

    // Instance tools: the bridge creates one instance with the parameterless constructor.
    public class Waiter
    {
        public static int Cancelled;
        public static int Started;
        public static int Running;
        public static int PeakRunning;

        [Description("Waits, then returns its label."), ConcurrencySafe]
        public async Task<string> Delay(int milliseconds, string label, CancellationToken cancellationToken)
        {
            var now = Interlocked.Increment(ref Running);
            lock (typeof(Waiter)) PeakRunning = Math.Max(PeakRunning, now);
            try
            {
                await Task.Delay(milliseconds, cancellationToken);
                return label;
            }
            finally
            {
                Interlocked.Decrement(ref Running);
            }
        }

        [Description("Waits until cancelled.")]
        public async Task<string> UntilCancelled(CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref Started);
            try
            {
                await Task.Delay(Timeout.Infinite, cancellationToken);
                return "not cancelled";
            }
            catch (OperationCanceledException)
            {
                Interlocked.Increment(ref Cancelled);
                throw;
            }
        }

        public static void Reset()
        {
            Cancelled = 0;
            Started = 0;
            Running = 0;
            PeakRunning = 0;
        }
    }

    // Ignores cancellation for a moment, and its token callback throws: the pipeline must still
    // wait for the body, so nothing runs behind a batch that has returned.
    public static class Stubborn
    {
        public static int Started;
        public static int Finished;

        [Description("Ignores cancellation for a moment; its cancellation callback throws.")]
        public static int IgnoreCancellation(CancellationToken cancellationToken)
        {
            cancellationToken.Register(() => { throw new InvalidOperationException("callback fails"); });
            Interlocked.Increment(ref Started);
            Thread.Sleep(300);
            return Interlocked.Increment(ref Finished);
        }
    }
}
