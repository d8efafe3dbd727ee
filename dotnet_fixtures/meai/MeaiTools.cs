// Real Microsoft.Extensions.AI functions, compiled only when the package is
// available (TETHER_MEAI_DIR or a NuGet cache); the tests that use them skip
// otherwise (and fail with TETHER_REQUIRE_MEAI=1). Each group below is the shape
// of one defect found with the real assemblies (issue 7), written the way a
// MEAI user writes tools.
//
// mcs: Mono's mscorlib has its own ValueTask, so the package's one (which an
// AIFunction subclass must override with) is named through an extern alias.
extern alias STTE;

using System;
using System.Collections.Generic;
using System.ComponentModel;
using System.Reflection;
using System.Text.Json;
using System.Threading;
using Microsoft.Extensions.AI;
using ValueTaskOfObject = STTE::System.Threading.Tasks.ValueTask<object>;

namespace Tether.Fixtures.Meai
{
    [AttributeUsage(AttributeTargets.Method | AttributeTargets.Class)]
    public sealed class ConcurrencySafeAttribute : Attribute { }

    public static class MeaiTools
    {
        static AIFunction FromMethod(Type type, string method)
        {
            // (object)null: with mcs, a bare null binds the wrong Create overload.
            var info = type.GetMethod(method, BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Static);
            return AIFunctionFactory.Create(info, (object)null, new AIFunctionFactoryOptions());
        }

        public static AIFunction Multiply
        {
            get { return AIFunctionFactory.Create((Func<int, int, int>)((a, b) => a * b), "Multiply", "Multiplies two integers."); }
        }

        public static IEnumerable<AIFunction> More()
        {
            yield return AIFunctionFactory.Create((Func<string, string>)(text => text.ToUpperInvariant()), "Shout", "Upper-cases text.");
            yield return AIFunctionFactory.Create((Func<string, int>)(text => { throw new InvalidOperationException("no " + text); }), "Refuse", "Always fails.");
        }

        public static FunctionCallContent SampleCall()
        {
            return new FunctionCallContent("call-1", "Multiply", new Dictionary<string, object> { { "a", 6 }, { "b", 7 } });
        }

        // 1. Approval: an ApprovalRequiredAIFunction must never run unapproved.
        public static int DangerousRuns;

        public static AIFunction Dangerous
        {
            get
            {
                return new ApprovalRequiredAIFunction(AIFunctionFactory.Create(
                    (Func<string, string>)(target => { Interlocked.Increment(ref DangerousRuns); return "destroyed " + target; }),
                    "Dangerous", "Destroys a target."));
            }
        }

        // 2. A call whose argument text its client could not parse: Exception set, Arguments null.
        public static FunctionCallContent UnparsableCall()
        {
            return FunctionCallContent.CreateFromParsedArguments(
                "{\"city\": \"Par", "call-2", "Forecast",
                (Func<string, IDictionary<string, object>>)(text => JsonSerializer.Deserialize<Dictionary<string, object>>(text, (JsonSerializerOptions)null)));
        }

        // 4. A subclass that keeps MEAI's default schema ({}), and one declaring a non-object schema.
        public static AIFunction Echo { get { return new EchoFunction(); } }

        public static object StringSchemaFunction() { return new StringSchemaFunction(); }

        // 5. A result with a cycle (System.Text.Json refuses it after the body ran), a binding
        // failure the JSON schema lets through (not a date), and a body that throws ArgumentException.
        public static AIFunction Cyclic
        {
            get
            {
                return AIFunctionFactory.Create(
                    (Func<string, Node>)(name => { var node = new Node { Name = name }; node.Next = node; return node; }),
                    "Cyclic", "Returns a node that points at itself.");
            }
        }

        public static int ScheduleRuns;

        public static AIFunction Schedule
        {
            get
            {
                return AIFunctionFactory.Create(
                    (Func<DateTime, int>)(when => { Interlocked.Increment(ref ScheduleRuns); return when.Year; }),
                    "Schedule", "Schedules at a date.");
            }
        }

        // A body that calls another AIFunction whose binding fails: the failure is the body's
        // (its side effects may have happened), so TOOL_ERROR, not INVALID_ARGS.
        public static int RelayRuns;

        public static AIFunction Relay { get { return FromMethod(typeof(MeaiTools), "RelayTo"); } }

        static string RelayTo(string when)
        {
            Interlocked.Increment(ref RelayRuns);
            var arguments = new AIFunctionArguments(new Dictionary<string, object> { { "when", when } });
            var pending = Schedule.InvokeAsync(arguments, CancellationToken.None);
            return "scheduled " + pending.AsTask().GetAwaiter().GetResult();
        }

        public static AIFunction Picky
        {
            get { return AIFunctionFactory.Create((Func<int, int>)(n => { throw new ArgumentException("n is odd", "n"); }), "Picky", "Rejects its input itself."); }
        }

        // 6. [ConcurrencySafe] on the underlying method, and on its declaring type.
        public static AIFunction Peek { get { return FromMethod(typeof(Lookups), "Peek"); } }

        public static AIFunction Look { get { return FromMethod(typeof(SafeLookups), "Look"); } }

        // 7. Services and context, as FunctionInvokingChatClient passes them.
        public static AIFunction Greeter { get { return FromMethod(typeof(MeaiTools), "GreetWith"); } }

        public static AIFunction WhoAmI { get { return FromMethod(typeof(MeaiTools), "Tenant"); } }

        static string GreetWith(IServiceProvider services, string name)
        {
            var greeting = (IGreeting)services.GetService(typeof(IGreeting));
            if (greeting == null) throw new InvalidOperationException("no IGreeting service is registered");
            return greeting.Hello(name);
        }

        static string Tenant(AIFunctionArguments arguments)
        {
            object tenant;
            return arguments.Context != null && arguments.Context.TryGetValue("tenant", out tenant) ? (string)tenant : "none";
        }

        public static IServiceProvider MakeServices(string greeting) { return new GreetingServices(greeting); }

        public static IServiceProvider EmptyServices() { return new GreetingServices(null); }

        // 8. Unknown argument names: Multiply's schema lists a and b only.

        // 9. A [Description] method of another assembly as a real AIFunction (binding compared with
        // the bridge's own binders). Takes a parameter, so discovery never calls it.
        public static AIFunction Wrap(MethodInfo method)
        {
            return AIFunctionFactory.Create(method, (object)null, new AIFunctionFactoryOptions());
        }

        // 10. What an AIFunction is handed: each argument's .NET type and JSON kind.
        public static AIFunction ArgumentKinds { get { return new ArgumentKindsFunction(); } }
    }

    // 11. Tools that answer with MEAI content (text and images) rather than data (issue 15).
    public static class Pictures
    {
        public static readonly byte[] Pixel = new byte[] { 0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3 };

        public static AIFunction Caption
        {
            get { return AIFunctionFactory.Create((Func<string, TextContent>)(text => new TextContent("caption: " + text)), "Caption", "Captions a text."); }
        }

        public static AIFunction Snapshot
        {
            get
            {
                return AIFunctionFactory.Create(
                    (Func<string, IList<AIContent>>)(label => new List<AIContent> { new TextContent("snapshot of " + label), new DataContent(Pixel, "image/png") }),
                    "Snapshot", "A labelled picture.");
            }
        }

        public static AIFunction Photo
        {
            get { return AIFunctionFactory.Create((Func<string, DataContent>)(name => new DataContent(Pixel, "image/png")), "Photo", "A picture."); }
        }

        public static AIFunction Brochure
        {
            get { return AIFunctionFactory.Create((Func<string, DataContent>)(name => new DataContent(Pixel, "application/pdf")), "Brochure", "A document, not an image."); }
        }
    }

    // 1 and 3 together: a [Description] method exposed only through an ApprovalRequiredAIFunction
    // under another name. Discovery keeps the AIFunction alone, so the method never runs unapproved.
    public static class Disks
    {
        public static int WipeRuns;

        [Description("Wipes a disk.")]
        public static string Wipe(string disk) { Interlocked.Increment(ref WipeRuns); return "wiped " + disk; }

        public static AIFunction WipeWithApproval
        {
            get
            {
                return new ApprovalRequiredAIFunction(AIFunctionFactory.Create(
                    typeof(Disks).GetMethod("Wipe"), (object)null, new AIFunctionFactoryOptions { Name = "wipe_with_approval" }));
            }
        }
    }

    // 3. A [Description] method that is also exposed as an AIFunction: one tool, the AIFunction.
    public static class Weather
    {
        public static int ForecastRuns;

        [Description("Forecast for a city.")]
        public static string Forecast(string city)
        {
            Interlocked.Increment(ref ForecastRuns);
            return "sunny in " + city;
        }

        public static AIFunction ForecastFunction
        {
            get { return AIFunctionFactory.Create(typeof(Weather).GetMethod("Forecast"), (object)null, new AIFunctionFactoryOptions()); }
        }
    }

    public static class Lookups
    {
        [ConcurrencySafe]
        public static int Peek(int key) { return key; }
    }

    [ConcurrencySafe]
    public static class SafeLookups
    {
        public static int Look(int key) { return key + 1; }
    }

    public sealed class Node
    {
        public string Name { get; set; }
        public Node Next { get; set; }
    }

    public interface IGreeting { string Hello(string name); }

    sealed class GreetingServices : IServiceProvider, IGreeting
    {
        readonly string _greeting;

        public GreetingServices(string greeting) { _greeting = greeting; }

        public object GetService(Type serviceType)
        {
            return serviceType == typeof(IGreeting) && _greeting != null ? this : null;
        }

        public string Hello(string name) { return _greeting + ", " + name; }
    }

    public sealed class EchoFunction : AIFunction
    {
        public override string Name { get { return "Echo"; } }

        public override string Description { get { return "Counts its arguments; keeps MEAI's default schema."; } }

        protected override ValueTaskOfObject InvokeCoreAsync(AIFunctionArguments arguments, CancellationToken cancellationToken)
        {
            return new ValueTaskOfObject("echo " + arguments.Count);
        }
    }

    public sealed class ArgumentKindsFunction : AIFunction
    {
        static readonly JsonElement Schema = JsonDocument.Parse("{\"type\":\"object\",\"additionalProperties\":true}").RootElement.Clone();

        public override string Name { get { return "ArgumentKinds"; } }

        public override string Description { get { return "Reports the .NET type and JSON kind of each argument it is handed."; } }

        public override JsonElement JsonSchema { get { return Schema; } }

        protected override ValueTaskOfObject InvokeCoreAsync(AIFunctionArguments arguments, CancellationToken cancellationToken)
        {
            var kinds = new Dictionary<string, string>();
            foreach (var argument in arguments)
                kinds[argument.Key] = argument.Value == null ? "null"
                    : argument.Value is JsonElement ? argument.Value.GetType().FullName + ":" + ((JsonElement)argument.Value).ValueKind
                    : argument.Value.GetType().FullName;
            return new ValueTaskOfObject(kinds);
        }
    }

    public sealed class StringSchemaFunction : AIFunction
    {
        static readonly JsonElement Schema = JsonDocument.Parse("{\"type\":\"string\"}").RootElement.Clone();

        public override string Name { get { return "Stringy"; } }

        public override JsonElement JsonSchema { get { return Schema; } }

        protected override ValueTaskOfObject InvokeCoreAsync(AIFunctionArguments arguments, CancellationToken cancellationToken)
        {
            return new ValueTaskOfObject("never");
        }
    }
}
