// The benchmark's no-op .NET tool as a real Microsoft.Extensions.AI AIFunction,
// compiled by benchmarks/peers.py only when the package is available (TETHER_MEAI_DIR).
using System;
using Microsoft.Extensions.AI;

namespace Tether.Bench.Meai
{
    public static class EchoFunction
    {
        static readonly AIFunction _echo = AIFunctionFactory.Create((Func<string, string>)(text => text), "Echo", "Echo the text.");

        public static AIFunction Echo
        {
            get { return _echo; }
        }
    }
}
