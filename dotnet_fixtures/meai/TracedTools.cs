// A C# tool that traces on its own, the way a .NET library does: an ActivitySource of its own,
// and an ActivityListener (here, standing in for the .NET OpenTelemetry SDK) that samples it.
// Each call starts an Activity and reports where it sits: its trace id, its parent's span id,
// and the name and parent span id of the Activity the bridge handed it as Activity.Current
// (bridge/Tracing.cs). SampleCarrier decides whether the listener also samples the bridge's own
// "Tether.Clr" source (the carrier then comes from it) or not (a plain Activity then).
using System;
using System.ComponentModel;
using System.Diagnostics;
using System.Threading;
using Microsoft.Extensions.AI;

namespace Tether.Fixtures.Meai
{
    public static class TracedTools
    {
        public static volatile bool SampleCarrier;
        public static int CarriersStopped;

        static readonly ActivitySource Source = new ActivitySource("Tether.Fixtures");
        static readonly ActivityListener Listener = Listen();

        static ActivityListener Listen()
        {
            var listener = new ActivityListener();
            listener.ShouldListenTo = source => source.Name == "Tether.Fixtures" || source.Name == "Tether.Clr";
            listener.Sample = Sample;
            listener.ActivityStopped = activity =>
            {
                if (activity.OperationName == "tether.dotnet.body") Interlocked.Increment(ref CarriersStopped);
            };
            ActivitySource.AddActivityListener(listener);
            return listener;
        }

        static ActivitySamplingResult Sample(ref ActivityCreationOptions<ActivityContext> options)
        {
            if (options.Source.Name == "Tether.Clr" && !SampleCarrier) return ActivitySamplingResult.None;
            return ActivitySamplingResult.AllDataAndRecorded;
        }

        // "<trace id> <parent span id> <carrier name> <carrier's parent span id> <carrier recorded>", or "none" without a current Activity.
        [Description("Starts an Activity of its own and says where it sits in the trace.")]
        public static string OwnActivity()
        {
            GC.KeepAlive(Listener);
            if (Activity.Current == null) return "none";
            using (var own = Source.StartActivity("fixture work", ActivityKind.Internal))
            {
                var carrier = own.Parent;
                return string.Join(" ", new[] {
                    own.TraceId.ToHexString(), own.ParentSpanId.ToHexString(),
                    carrier == null ? "-" : carrier.OperationName,
                    carrier == null ? "-" : carrier.ParentSpanId.ToHexString(),
                    carrier == null ? "-" : (carrier.Source.Name == "Tether.Clr" ? "recorded" : "plain"),
                });
            }
        }

        // The same, as a real AIFunction (the bridge's AIFunctionHandle path).
        public static AIFunction OwnActivityFunction
        {
            get { return AIFunctionFactory.Create((Func<string>)ThroughMeai, "OwnActivityMeai", "The same, through MEAI."); }
        }

        static string ThroughMeai()
        {
            return OwnActivity();
        }
    }
}
