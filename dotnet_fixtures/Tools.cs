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

    public sealed class Address
    {
        public string City { get; set; }
        public List<string> Lines { get; set; }
        public Point Location { get; set; }
    }

    // How arguments arrive: each parameter's .NET type and value, as text, so a test can compare
    // the binders (System.Text.Json, the fallback, an AIFunction's own) on the same arguments.
    public static class Binding
    {
        [Description("Reports each argument's .NET type and value.")]
        public static Dictionary<string, string> Report(
            string text, int count, bool flag, Unit unit, List<int> numbers, Address address,
            long big = 0, double ratio = 0.5, decimal price = 0m, int? maybe = null, string[] words = null,
            Dictionary<string, int> tally = null, string note = "none", Unit other = Unit.Celsius)
        {
            return new Dictionary<string, string>
            {
                { "text", Show(text) }, { "count", Show(count) }, { "flag", Show(flag) }, { "unit", Show(unit) },
                { "numbers", Show(numbers) }, { "address", Show(address) }, { "big", Show(big) }, { "ratio", Show(ratio) },
                { "price", Show(price) }, { "maybe", Show(maybe) }, { "words", Show(words) }, { "tally", Show(tally) },
                { "note", Show(note) }, { "other", Show(other) },
            };
        }

        static string Show(object value)
        {
            if (value == null) return "null";
            var address = value as Address;
            if (address != null)
                return "Address{city=" + Show(address.City) + ",lines=" + Show(address.Lines) + ",location="
                    + (address.Location == null ? "null" : "(" + address.Location.X + "," + address.Location.Y + ")") + "}";
            var tally = value as Dictionary<string, int>;
            if (tally != null)
                return "Dictionary{" + string.Join(",", tally.OrderBy(e => e.Key, StringComparer.Ordinal).Select(e => e.Key + "=" + e.Value).ToArray()) + "}";
            var text = value as string;
            if (text != null) return "String:" + text;
            var sequence = value as System.Collections.IEnumerable;
            if (sequence != null)
                return value.GetType().Name + "[" + string.Join(",", sequence.Cast<object>().Select(Show).ToArray()) + "]";
            if (value is double) return "Double:" + ((double)value).ToString("R", System.Globalization.CultureInfo.InvariantCulture);
            return value.GetType().Name + ":" + System.Convert.ToString(value, System.Globalization.CultureInfo.InvariantCulture);
        }
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
    // Never looks at its token: blocks until the test releases it, so a timed call has to be
    // abandoned after its grace period (issue 17: a .NET body that ignores cancellation).
    public static class Deaf
    {
        public static int Started;
        public static int Finished;
        static readonly ManualResetEventSlim Gate = new ManualResetEventSlim(false);

        [Description("Blocks until released, never checking its cancellation token.")]
        public static string IgnoreToken(CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref Started);
            Gate.Wait();
            Interlocked.Increment(ref Finished);
            return "released";
        }

        public static void Release() { Gate.Set(); }

        public static void Reset()
        {
            Gate.Reset();
            Started = 0;
            Finished = 0;
        }
    }
}
