"""The test kit for tools hosted by tether_clr (issue 19); :mod:`tether_clr.testing.parity` compares
C# tools under tether_clr with Microsoft.Extensions.AI's own ``FunctionInvokingChatClient``."""
