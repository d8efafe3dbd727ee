// The benchmark's no-op .NET tool as a [Description] method the bridge wraps
// (used when Microsoft.Extensions.AI is not available). Compiled on demand by
// benchmarks/peers.py into the cache; nothing binary is committed.
using System.ComponentModel;

namespace Tether.Bench
{
    public static class EchoMethod
    {
        [Description("Echo the text.")]
        public static string Echo([Description("The text")] string text)
        {
            return text;
        }
    }
}
