// Real Microsoft.Extensions.AI functions, compiled only when the package is
// available (TETHER_MEAI_DIR or a NuGet cache); the tests that use them skip otherwise.
using System;
using System.Collections.Generic;
using System.ComponentModel;
using Microsoft.Extensions.AI;

namespace Tether.Fixtures.Meai
{
    public static class MeaiTools
    {
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
    }
}
