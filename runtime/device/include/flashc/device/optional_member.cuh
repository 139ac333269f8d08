// The optional members of a kernel's Config (or a modifier's struct): FLASHC_OPTIONAL_MEMBER(Trait, member, Type,
// fallback) declares Trait<C>::value, C::member where C declares it, else `fallback`.
#pragma once

#define FLASHC_OPTIONAL_MEMBER(Trait, member, Type, fallback) \
  template <class C, class = void>                            \
  struct Trait {                                              \
    static constexpr Type value = fallback;                   \
  };                                                          \
  template <class C>                                          \
  struct Trait<C, decltype(void(C::member))> {                \
    static constexpr Type value = C::member;                  \
  };
